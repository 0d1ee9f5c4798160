/**
 * Input fields every workflow tool shares: the session to work under, the sub-agent kind and its
 * tools, the step limit and how many sub-agents run at once.
 * @module
 */
import { z } from 'zod';
import { sessionIdInput } from '../sessions/session-input';

export const sessionIdField = () =>
  sessionIdInput(
    'context-or-none',
    'Session to work under. Omit inside a run; outside one, a new session is created.',
  );
export const agentField = () =>
  z.string().min(1).default('general').describe('Sub-agent kind: general (default) or explore (read-only).');
export const toolsField = () =>
  z
    .array(z.string().min(1))
    .min(1)
    .optional()
    .describe("Narrow the sub-agents to these tools. Omit for the kind's own set.");
export const maxTurns = () =>
  z.number().int().min(1).max(500).optional().describe('Step limit of each sub-agent.');
export const maxParallel = () =>
  z
    .number()
    .int()
    .min(1)
    .max(16)
    .optional()
    .describe('Most sub-agents running at once (default options.workflows.max_parallel).');
