/**
 * `[a2a]`: serving svc as an A2A agent, and the remote agents it delegates to.
 * @module
 */
import { z } from 'zod';
import { lazy } from '../../util/lazy';
import { selector } from './shared';

const a2aSkillSchema = lazy(() =>
  z.strictObject({
    id: z.string().min(1).describe('Skill id, unique on the card.'),
    name: z.string().min(1).optional().describe('Display name (default: the id).'),
    description: z.string().optional().describe('What the agent does with this skill.'),
    tags: z.array(z.string()).default([]).describe('Keywords a capability search matches.'),
    examples: z.array(z.string()).optional().describe('Example prompts.'),
  }),
);

export const a2aSchema = lazy(() =>
  z.strictObject({
    enabled: z
      .boolean()
      .default(false)
      .describe(
        'Serve svc as an A2A agent on the HTTP server: the agent card at /.well-known/agent-card.json (and agent.json) and JSON-RPC message/send, tasks/get, tasks/cancel at /a2a. Bearer auth applies.',
      ),
    name: z.string().min(1).optional().describe('Agent card name (default svc).'),
    description: z
      .string()
      .optional()
      .describe('Agent card description (default: the agent kind description).'),
    agent: z.string().min(1).default('build').describe('Agent kind that runs A2A tasks (a primary kind).'),
    model: selector().optional().describe('Model selector for A2A tasks (default: the usual selection).'),
    skills: z
      .array(a2aSkillSchema())
      .default([])
      .describe('Skills advertised on the card (default: one skill for the agent kind).'),
    max_wait_seconds: z
      .number()
      .positive()
      .max(3600)
      .default(120)
      .describe('How long a blocking message/send waits for the task before answering with a working task.'),
    remotes: z
      .record(
        z.string(),
        z.strictObject({
          url: z.string().min(1).describe('Base URL of the remote agent, or the URL of its agent card.'),
          token: z.string().optional().describe('Bearer token sent to it (use ${ENV_NAME}).'),
          description: z.string().optional(),
        }),
      )
      .default({})
      .describe('Known remote A2A agents, by name: a2a_delegate reaches them by name or capability.'),
  }),
);
