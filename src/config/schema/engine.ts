/**
 * `[engine]`: what runs the agent's runs (issue 19, docs/engine.md). `in-process` (the default):
 * the runs of a node live in its memory, on the SQLite or the PostgreSQL store. `dbos`: durable
 * runs checkpointed to the PostgreSQL store (needs `[store] url`; not in this build yet).
 * @module
 */
import { z } from 'zod';

export const ENGINE_KINDS = ['in-process', 'dbos'] as const;

export const engineSchema = z.strictObject({
  kind: z
    .enum(ENGINE_KINDS)
    .default('in-process')
    .describe(
      'The run engine: "in-process" (default; runs live in the node that started them) or "dbos" (durable runs on the PostgreSQL store; needs [store] url).',
    ),
});
