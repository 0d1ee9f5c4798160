/**
 * The prompt queue: `queue_enqueue` and `get_prompt_queue_status` (the same queue as TUI
 * ctrl+enter and `/enqueue`).
 * @module
 */
import { z } from 'zod';
import { resolveSession } from '../sessions/resolve-session';
import { sessionIdInput } from '../sessions/session-input';
import { agentKindWithin, agentLoosening, agentScope } from './agent-caller';
import { defineTool } from './core/define-tool';
import { route, SESSION_ROUTES } from './session-routes';

const sessionIdField = () => sessionIdInput('current');

export const getPromptQueueStatus = defineTool({
  name: 'get_prompt_queue_status',
  family: 'sessions',
  tag: 'primitive',
  description:
    'The prompt queue (the same queue as TUI ctrl+enter, /enqueue and queue_enqueue): per session, its state, active run and queued prompts.',
  input: () =>
    z.strictObject({
      session_id: sessionIdInput(
        'none',
        'One session. Omit for every session with a queue or an active run.',
      ),
    }),
  mutates: false,
  surfaces: { mcp: 'svc_get_prompt_queue_status' },
  run: async (ctx, input) => {
    const { app } = ctx;
    const ids = input.session_id
      ? [(await app.sessions.require(input.session_id)).id]
      : [
          ...new Set([
            ...(await app.runs.list({ status: ['queued', 'running'], limit: 500 })).map((r) => r.session_id),
            ...app.agent.active().map((a) => a.session_id),
          ]),
        ];
    const sessions = await Promise.all(ids.map((id) => app.agent.queue(id)));
    return { sessions, total_queued: sessions.reduce((n, s) => n + s.length, 0) };
  },
});

export const queueEnqueue = defineTool({
  name: 'queue_enqueue',
  family: 'sessions',
  tag: 'primitive',
  description:
    'Queue a prompt for a session (the same queue as TUI ctrl+enter and /enqueue). It runs after the active run and the prompts queued before it; when the session is idle it starts at once unless start is false.',
  input: () =>
    z.strictObject({
      session_id: sessionIdField(),
      prompt: z.string().min(1).describe('The prompt to queue.'),
      agent: z.string().min(1).optional().describe('Agent kind for its run.'),
      start: z
        .boolean()
        .default(true)
        .describe(
          'When the session is idle: start it at once (default), or false to leave it queued until the next send.',
        ),
    }),
  mutates: true,
  surfaces: {
    mcp: 'svc_queue_enqueue',
    http: { ...route(SESSION_ROUTES.enqueue), params: { id: 'session_id' }, status: 202 },
  },
  // Calls change state (sessions, runs, plans): nothing for the parity walker to compare.
  parity: false,
  run: async (ctx, input) => {
    const { app } = ctx;
    const session = (await resolveSession(app, input, { onMissing: 'current', context: ctx.sessionId }))
      .session;
    await agentScope(ctx, session.id, 'queue prompts for');
    agentLoosening(ctx, session, { agent: input.agent });
    await agentKindWithin(ctx, input.agent ?? session.agent);
    const sent = await app.agent.enqueue({
      sessionId: session.id,
      prompt: input.prompt,
      agent: input.agent,
      origin: ctx.surface,
      start: input.start,
    });
    return { ...sent, queue: await app.agent.queue(session.id) };
  },
});
