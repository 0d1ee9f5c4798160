/**
 * The `message` tool: a session's messages (send a prompt, list, inspect, update, delete).
 * Thin: the work is in `app.agent` and `app.sessions`.
 * @module
 */
import { z } from 'zod';
import { textOf } from '../agent/history';
import { messageView } from '../agent/views';
import { SvcError } from '../errors';
import { resolveSession } from '../sessions/resolve-session';
import { sessionIdInput } from '../sessions/session-input';
import type { MessagePart } from '../sessions/session-store';
import { agentKindWithin, agentLoosening, agentScope } from './agent-caller';
import { defineTool } from './core/define-tool';
import type { ToolHost } from './core/types';
import { busyGuard } from './session-guards';
import { route, SESSION_ROUTES } from './session-routes';

const sessionIdField = () => sessionIdInput('current');

const messageActions = ['send', 'list', 'inspect', 'update', 'delete'] as const;

export const message = defineTool({
  name: 'message',
  family: 'sessions',
  tag: 'primitive',
  description:
    'Messages of a session. send: a prompt (starts a run, or queues it behind the active one); list: the messages; inspect: one message; update: replace the text of a message; delete: remove a message. update and delete are refused while a run is active.',
  input: () =>
    z.strictObject({
      action: z.enum(messageActions).describe('send, list, inspect, update or delete.'),
      session_id: sessionIdField(),
      message_id: z.string().min(1).optional().describe('The message (inspect, update, delete).'),
      text: z.string().min(1).optional().describe('The prompt (send) or the new text (update).'),
      limit: z.number().int().min(1).max(1000).default(50).describe('list: most recent messages to return.'),
      wait: z
        .boolean()
        .default(false)
        .describe('send: wait for the run to finish and return its answer (always on from the CLI).'),
      agent: z.string().min(1).optional().describe('send: agent kind for this run.'),
    }),
  mutates: true,
  surfaces: {
    mcp: 'svc_message',
    http: [
      { ...route(SESSION_ROUTES.messages), params: { id: 'session_id' }, fixed: { action: 'list' } },
      {
        ...route(SESSION_ROUTES.send),
        params: { id: 'session_id' },
        fixed: { action: 'send' },
        status: 202,
        // The session API's body is `{ "prompt": "…" }` (the TUI attach client sends that); `text` works too.
        prepare: ({ prompt, ...input }) => (prompt === undefined ? input : { text: prompt, ...input }),
      },
    ],
  },
  // Calls change state (sessions, runs, plans): nothing for the parity walker to compare.
  parity: false,
  run: async (ctx, input) => {
    const { app } = ctx;
    switch (input.action) {
      case 'send': {
        if (!input.text) throw new SvcError('invalid_input', 'text: required for action send');
        const session = (await resolveSession(app, input, { onMissing: 'current', context: ctx.sessionId }))
          .session;
        await agentScope(ctx, session.id, 'send prompts to');
        agentLoosening(ctx, session, { agent: input.agent });
        await agentKindWithin(ctx, input.agent ?? session.agent);
        const wait = input.wait || ctx.surface === 'cli';
        if (wait && session.id === ctx.sessionId) {
          throw new SvcError(
            'invalid_input',
            'wait: cannot wait for a prompt sent to the session this run works in (it runs after this run); send without wait',
          );
        }
        const sent = await app.agent.send({
          sessionId: session.id,
          prompt: input.text,
          agent: input.agent,
          origin: ctx.surface,
        });
        if (!wait) return { action: 'send', ...sent };
        const result = await app.agent.wait(sent.run_id, { signal: ctx.signal });
        return { action: 'send', ...sent, result };
      }
      case 'list': {
        const session = (await resolveSession(app, input, { onMissing: 'current', context: ctx.sessionId }))
          .session;
        const messages = await app.sessions.messages(session.id, { limit: input.limit });
        return {
          action: 'list',
          session_id: session.id,
          messages: messages.map(messageView),
          count: messages.length,
          total: await app.sessions.messageCount(session.id),
        };
      }
      case 'inspect': {
        const found = await requireMessage(app, input.message_id);
        return { action: 'inspect', message: messageView(found) };
      }
      case 'update': {
        const found = await requireMessage(app, input.message_id);
        if (!input.text) throw new SvcError('invalid_input', 'text: required for action update');
        if (found.role !== 'user' && found.role !== 'assistant') {
          throw new SvcError('invalid_input', `message_id: a ${found.role} message has no text to update`);
        }
        await agentScope(ctx, found.session_id, 'edit the messages of');
        await busyGuard(app, found.session_id, 'edit its messages');
        const parts: MessagePart[] = [
          { type: 'text', text: input.text },
          ...found.parts.filter((p) => p.type !== 'text'),
        ];
        const updated = await app.sessions.updateMessage(found.id, { parts });
        return { action: 'update', message: messageView(updated), previous_text: textOf(found.parts) };
      }
      case 'delete': {
        const found = await requireMessage(app, input.message_id);
        await agentScope(ctx, found.session_id, 'delete the messages of');
        await busyGuard(app, found.session_id, 'delete its messages');
        await app.sessions.deleteMessage(found.id);
        return { action: 'delete', deleted: found.id, session_id: found.session_id };
      }
      default: {
        const exhaustive: never = input.action;
        throw new SvcError('invalid_input', `action: unknown ${String(exhaustive)}`);
      }
    }
  },
});

async function requireMessage(app: ToolHost, id: string | undefined) {
  if (!id) throw new SvcError('invalid_input', 'message_id: required for this action');
  const found = await app.sessions.getMessage(id);
  if (!found) throw new SvcError('not_found', `message_id: no message "${id}"; see message action list`);
  return found;
}
