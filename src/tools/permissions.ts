/**
 * Permission requests of a session (sessions family): the pending ones, and the answer to one
 * (allow once, allow for the session, deny). Every client answers through `answer_permission`
 * (HTTP's session route, both TUI clients, ACP, `svc run`'s terminal prompt), so the decision is
 * validated in one place. The work is in the permission service (`app.agent` → `app.permissions`).
 * @module
 */
import { z } from 'zod';
import { SvcError } from '../errors';
import { PERMISSION_DECISIONS } from '../permissions/permission-service';
import { sessionIdInput } from '../sessions/session-input';
import { defineTool } from './core/define-tool';
import { route, SESSION_ROUTES } from './session-routes';

export const listPermissionRequests = defineTool({
  name: 'list_permission_requests',
  family: 'sessions',
  tag: 'primitive',
  description:
    'Permission requests waiting for an answer in a session and its sub-agent sessions, oldest first: the tool, what it would do (title) and its details (the diff of an edit, the command of a bash call).',
  input: () =>
    z.strictObject({
      session_id: sessionIdInput('required', 'The session (its sub-agent sessions are included).'),
    }),
  mutates: false,
  surfaces: {
    mcp: 'svc_list_permission_requests',
    http: { ...route(SESSION_ROUTES.permissions), params: { id: 'session_id' } },
  },
  // Pending requests live in the process that runs the agent (or, on PostgreSQL, in the store):
  // nothing for the parity walker.
  parity: false,
  run: async (ctx, input) => {
    const { app } = ctx;
    const session = await app.sessions.require(input.session_id);
    // Any node's (PostgreSQL: the stored requests of running runs; issue 19 item 4).
    const pending = await app.permissions.listPending(session.id);
    return { session_id: session.id, permissions: pending, count: pending.length };
  },
});

const decisionInput = () =>
  z
    .enum(PERMISSION_DECISIONS)
    .describe('allow_once, allow_session (this tool and scope, for the rest of the session) or deny.');

export const answerPermission = defineTool({
  name: 'answer_permission',
  family: 'sessions',
  tag: 'primitive',
  description:
    'Answer a pending permission request of a session: allow once, allow for the session, or deny (with a message the model reads). The first answer wins; the waiting tool call then runs or fails.',
  input: () =>
    z.strictObject({
      session_id: sessionIdInput('required', 'The session the request belongs to (or its parent session).'),
      request_id: z.string().min(1).describe('The request (list_permission_requests lists them).'),
      decision: decisionInput(),
      message: z
        .string()
        .max(2000)
        .optional()
        .describe('A note for the agent: with deny, the reason it reads. Omit for none.'),
      by: z
        .string()
        .min(1)
        .max(80)
        .optional()
        .describe('Who answers, kept with the decision. Omit for the surface (http, tui, acp, …).'),
    }),
  mutates: true,
  surfaces: {
    mcp: 'svc_answer_permission',
    http: {
      ...route(SESSION_ROUTES.answer),
      params: { id: 'session_id', request_id: 'request_id' },
      // The route's body is `{ decision, by?, message? }`; a blank or non-text `by` means the surface.
      prepare: ({ by, ...input }) =>
        typeof by === 'string' && by.trim() ? { ...input, by: by.trim().slice(0, 80) } : input,
    },
  },
  // Answers change state that lives in the agent's process: nothing for the parity walker.
  parity: false,
  run: async (ctx, input) => {
    const { app } = ctx;
    const session = await app.sessions.require(input.session_id);
    // Only a request of this session (or its sub-agents): a client answers for the session it drives.
    const pending = (await app.permissions.listPending(session.id)).find(
      (p) => p.request_id === input.request_id,
    );
    if (!pending) {
      throw new SvcError(
        'not_found',
        `request_id: no pending permission request "${input.request_id}" in session ${session.id} (answered already, or its run ended); see GET /v1/sessions/${session.id}/permissions`,
      );
    }
    // An agent never approves its own requests (nor its sub-agents'): the operator answers them.
    if (ctx.surface === 'agent' && ctx.sessionId) {
      if ((await app.sessions.root(ctx.sessionId)) === (await app.sessions.root(pending.session_id))) {
        throw new SvcError(
          'forbidden',
          'answer_permission: a request of your own session family is answered by the operator, not by the agent',
        );
      }
    }
    const by = input.by ?? ctx.surface;
    const answered = await app.agent.answerPermission(pending.request_id, input.decision, by, input.message);
    return {
      session_id: session.id,
      request_id: answered.request_id,
      tool: answered.tool,
      decision: input.decision,
      by,
      ...(input.message?.trim() ? { message: input.message.trim() } : {}),
    };
  },
});

export const permissionTools = [listPermissionRequests, answerPermission];
