/**
 * The session API routes that are not a tool's twin: pending permission requests of a session and
 * the answer to one (`SESSION_ROUTES.permissions`, `SESSION_ROUTES.answer`). Every other session
 * route (list, create, get, update, delete, messages, send, enqueue, cancel) is the `http` binding
 * of its session tool, mounted with the registry; the event stream is `session-events.ts`.
 * @module
 */
import type { Context, Hono } from 'hono';
import { SvcError } from '../../errors';
import { PERMISSION_DECISIONS, type PermissionDecision } from '../../permissions/permission-service';
import { route, SESSION_ROUTES } from '../../tools/session-routes';
import { readJsonObject } from './body';
import { errorResponse } from './errors';
import type { HttpExtension } from './extensions';
import type { AppRef } from './mount-tools';
import type { OpenApiRoutes } from './openapi';

export const sessionsApi: HttpExtension = (hono: Hono, appRef: AppRef, kit) => {
  const permissions = route(SESSION_ROUTES.permissions);
  const answer = route(SESSION_ROUTES.answer);

  hono.on(permissions.method, permissions.path, (c) =>
    guarded(c, appRef, (app) => {
      const sessionId = c.req.param('id') ?? '';
      app.sessions.require(sessionId);
      const pending = app.agent.pendingPermissions(sessionId);
      return c.json(
        app.redactor.value({ session_id: sessionId, permissions: pending, count: pending.length }),
      );
    }),
  );

  hono.on(answer.method, answer.path, (c) =>
    guarded(c, appRef, async (app) => {
      const sessionId = c.req.param('id') ?? '';
      const requestId = c.req.param('request_id') ?? '';
      app.sessions.require(sessionId);
      const body = await readJsonObject(c);
      const decision = body.decision;
      if (typeof decision !== 'string' || !PERMISSION_DECISIONS.includes(decision as PermissionDecision)) {
        throw new SvcError(
          'invalid_input',
          `decision: expected one of ${PERMISSION_DECISIONS.join(', ')}, got ${JSON.stringify(decision ?? null)}`,
        );
      }
      const by = typeof body.by === 'string' && body.by.trim() ? body.by.trim().slice(0, 80) : 'http';
      // Only a request of this session (or its sub-agents): a client answers for the session it drives.
      const pending = app.agent.pendingPermissions(sessionId).find((p) => p.request_id === requestId);
      if (!pending) {
        throw new SvcError(
          'not_found',
          `request_id: no pending permission request "${requestId}" in session ${sessionId} (answered already, or its run ended); see GET /v1/sessions/${sessionId}/permissions`,
        );
      }
      const answered = app.agent.answerPermission(requestId, decision as PermissionDecision, by);
      return c.json(
        app.redactor.value({
          session_id: sessionId,
          request_id: answered.request_id,
          tool: answered.tool,
          decision,
          by,
        }),
      );
    }),
  );

  describe(kit.openapi);
};

async function guarded(
  c: Context,
  appRef: AppRef,
  handler: (app: NonNullable<ReturnType<AppRef>>) => Response | Promise<Response>,
): Promise<Response> {
  const app = appRef();
  if (!app?.runtime.ready) return errorResponse(c, new SvcError('unavailable', 'App not ready'));
  try {
    return await handler(app);
  } catch (error) {
    return errorResponse(c, error, { app });
  }
}

function describe(openapi: OpenApiRoutes): void {
  const id = {
    name: 'id',
    in: 'path',
    required: true,
    schema: { type: 'string' },
    description: 'Session id.',
  };
  const errors = {
    '400': { $ref: '#/components/responses/BadRequest' },
    '401': { $ref: '#/components/responses/Unauthorized' },
    '404': { $ref: '#/components/responses/NotFound' },
    '503': { $ref: '#/components/responses/NotReady' },
  };
  const pendingSchema = {
    type: 'object',
    properties: {
      request_id: { type: 'string' },
      session_id: { type: 'string' },
      run_id: { type: ['string', 'null'] },
      tool_call_id: { type: ['string', 'null'] },
      tool: { type: 'string' },
      title: { type: 'string' },
      scope: { type: ['string', 'null'] },
      safe: { type: 'boolean' },
      details: { type: ['object', 'null'] },
      created_at: { type: 'integer' },
    },
    required: ['request_id', 'session_id', 'tool', 'title'],
  };
  const permissions = route(SESSION_ROUTES.permissions);
  openapi.add(permissions.method, permissions.path, {
    operationId: 'session_permissions',
    summary: 'Pending permission requests of a session (and its sub-agent sessions).',
    tags: ['sessions'],
    parameters: [id],
    responses: {
      '200': {
        description: '`permissions` is the list (empty when nothing waits).',
        content: {
          'application/json': {
            schema: {
              type: 'object',
              properties: {
                session_id: { type: 'string' },
                permissions: { type: 'array', items: pendingSchema },
                count: { type: 'integer' },
              },
              required: ['session_id', 'permissions', 'count'],
            },
          },
        },
      },
      ...errors,
    },
  });
  const answer = route(SESSION_ROUTES.answer);
  openapi.add(answer.method, answer.path, {
    operationId: 'session_permission_answer',
    summary: 'Answer a pending permission request: allow once, allow for the session, or deny.',
    description: 'The first answer wins; a request already answered (or whose run ended) is 404.',
    tags: ['sessions'],
    parameters: [
      id,
      {
        name: 'request_id',
        in: 'path',
        required: true,
        schema: { type: 'string' },
        description: 'Request id.',
      },
    ],
    requestBody: {
      required: true,
      content: {
        'application/json': {
          schema: {
            type: 'object',
            properties: {
              decision: { type: 'string', enum: [...PERMISSION_DECISIONS] },
              by: { type: 'string', description: 'Who answers, kept with the decision (default http).' },
            },
            required: ['decision'],
          },
        },
      },
    },
    responses: {
      '200': {
        description: 'The answer was recorded; the waiting tool call goes on (or fails on deny).',
        content: {
          'application/json': {
            schema: {
              type: 'object',
              properties: {
                session_id: { type: 'string' },
                request_id: { type: 'string' },
                tool: { type: 'string' },
                decision: { type: 'string' },
                by: { type: 'string' },
              },
              required: ['session_id', 'request_id', 'tool', 'decision', 'by'],
            },
          },
        },
      },
      ...errors,
    },
  });
}
