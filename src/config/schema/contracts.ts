/**
 * `[contracts.<id>]`: the workspace contract's obligations.
 * @module
 */
import { z } from 'zod';
import { lazy } from '../../util/lazy';

const obligationBase = lazy(() => ({
  description: z.string().optional().describe('What the obligation checks, for people.'),
  disabled: z.boolean().default(false).describe('Keep the obligation but skip it.'),
}));

export const obligationSchema = lazy(() =>
  z.discriminatedUnion('kind', [
    z.strictObject({
      kind: z.literal('command'),
      command: z.string().min(1).describe('Shell command that must exit 0 (tests, lint).'),
      timeout_seconds: z.number().int().positive().max(600).optional().describe('Default 300.'),
      ...obligationBase(),
    }),
    z.strictObject({
      kind: z.literal('file_exists'),
      path: z.string().min(1).describe('Workspace-relative path that must exist.'),
      ...obligationBase(),
    }),
    z.strictObject({
      kind: z.literal('no_markers'),
      marker_kind: z
        .enum(['note', 'todo', 'warning', 'handoff', 'in_progress'])
        .default('todo')
        .describe('Workspace marker kind that must have no open markers (default todo).'),
      path: z
        .string()
        .optional()
        .describe('Only markers overlapping this path (default: the whole workspace).'),
      ...obligationBase(),
    }),
    z.strictObject({
      kind: z.literal('plan_approved'),
      ...obligationBase(),
    }),
  ]),
);
