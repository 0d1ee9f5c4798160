/**
 * `[engine]`: what runs the agent's runs (issue 19, docs/engine.md). `in-process` (the default):
 * the runs of a node live in its memory, on the SQLite or the PostgreSQL store. `dbos`: durable
 * runs checkpointed to the PostgreSQL store (needs `[store] url`), queued one per workspace across
 * the cluster under the run limits below.
 * @module
 */
import { z } from 'zod';
import { lazy } from '../../util/lazy';

export const ENGINE_KINDS = ['in-process', 'dbos'] as const;
/** What a resumed run does with a call its dead node left without a result (docs/engine.md). */
export const UNKNOWN_OUTCOME_MODES = ['tell_model', 'ask'] as const;

const positive = (what: string) =>
  z
    .number()
    .int(`${what}: must be a whole number`)
    .min(1, `${what}: must be at least 1`)
    .max(100_000, `${what}: must be at most 100000`);

export const engineSchema = lazy(() =>
  z.strictObject({
    kind: z
      .enum(ENGINE_KINDS)
      .default('in-process')
      .describe(
        'The run engine: "in-process" (default; runs live in the node that started them) or "dbos" (durable runs on the PostgreSQL store; needs [store] url).',
      ),
    max_runs: positive('max_runs')
      .optional()
      .describe(
        'kind = "dbos": root runs running at once across the whole cluster (every workspace); unset (default): no cluster-wide limit beyond one run per workspace and max_runs_per_node.',
      ),
    max_runs_per_node: positive('max_runs_per_node')
      .optional()
      .describe('kind = "dbos": root runs one node runs at once (default 16); more wait in the queue.'),
    queue_poll_ms: z
      .number()
      .int('queue_poll_ms: must be a whole number of milliseconds')
      .min(50, 'queue_poll_ms: must be at least 50')
      .max(60_000, 'queue_poll_ms: must be at most 60000')
      .optional()
      .describe(
        'kind = "dbos": how often (at least) a node looks for queued runs it may start, in ms (default 1000).',
      ),
    unknown_outcome: z
      .enum(UNKNOWN_OUTCOME_MODES)
      .default('tell_model')
      .describe(
        'kind = "dbos": a call cut off by its node\'s death (bash, a write, a sub-agent), when another node resumes the run: "tell_model" (default) gives the model the call\'s outcome as unknown, with what the workspace shows; "ask" asks the operator first (a permission request any node can answer): allowed, the call runs again; denied or unanswered, the model is told as with "tell_model".',
      ),
  }),
);
