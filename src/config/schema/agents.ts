/**
 * `[agents.<kind>]`: an agent kind (model, prompt, steps, tools).
 * @module
 */
import { z } from 'zod';
import { lazy } from '../../util/lazy';
import { toolList } from './shared';

const agentToolsSchema = lazy(() =>
  z
    .strictObject({
      allow: toolList().optional().describe('Explicit allowlist: only these tools.'),
      deny: toolList().optional().describe('Tools removed for this agent.'),
    })
    .catchall(z.boolean()),
);

export const agentSchema = lazy(() =>
  z.strictObject({
    description: z.string().optional(),
    model: z.string().optional(),
    mode: z.enum(['primary', 'subagent', 'all']).optional(),
    prompt: z.string().optional(),
    max_steps: z.number().int().positive().optional(),
    reasoning_effort: z.string().optional(),
    read_only: z.boolean().optional(),
    tools: agentToolsSchema().optional(),
  }),
);
