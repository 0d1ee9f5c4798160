/**
 * The A2A route family (an `HttpExtension`): `GET /.well-known/agent-card.json` (and the older
 * `/.well-known/agent.json`) and `POST /a2a` (JSON-RPC). Answered only when `[a2a] enabled` is
 * true, 404 otherwise; bearer auth and the body limit have already run (spec: only /healthz is
 * unprotected, so the card advertises the bearer scheme). JSON-RPC answers are always HTTP 200.
 * @module
 */
import type { Context, Hono } from 'hono';
import { SvcError } from '../../errors';
import { buildAgentCard, handleA2aRpc } from '../../remote/a2a-agent';
import { CARD_PATH, LEGACY_CARD_PATH, RPC_ERRORS, RPC_PATH } from '../../remote/a2a-wire';
import type { HttpExtension, HttpKit } from '../http/http-kit';
import type { AppRef } from '../http/mount-tools';

export const mountA2aRoutes: HttpExtension = (hono: Hono, appRef: AppRef, kit: HttpKit) => {
  const ready = (c: Context) => {
    const app = appRef();
    if (!app?.runtime.ready) throw new SvcError('unavailable', 'App not ready');
    if (!app.config.a2a.enabled) {
      throw new SvcError(
        'not_found',
        `no route ${c.req.method} ${c.req.path} (set [a2a] enabled = true to serve svc as an A2A agent)`,
      );
    }
    return app;
  };
  const card = (c: Context) => {
    const app = ready(c);
    return c.json(buildAgentCard(app, new URL(c.req.url).origin));
  };
  hono.get(CARD_PATH, card);
  hono.get(LEGACY_CARD_PATH, card);
  hono.post(RPC_PATH, async (c) => {
    const app = ready(c);
    let body: unknown;
    try {
      body = JSON.parse(await c.req.text());
    } catch {
      return c.json({
        jsonrpc: '2.0',
        id: null,
        error: { code: RPC_ERRORS.parse, message: 'Parse error: the body is not JSON' },
      });
    }
    return c.json(await handleA2aRpc(app, body, c.req.raw.signal));
  });
  describe(kit);
};

function describe(kit: HttpKit) {
  const cardOperation = (operationId: string) => ({
    operationId,
    summary: 'The A2A agent card of this svc (when [a2a] enabled is true).',
    tags: ['a2a'],
    responses: {
      '200': {
        description: 'An A2A agent card (protocol 0.3).',
        content: { 'application/json': { schema: { type: 'object' } } },
      },
      '401': { $ref: '#/components/responses/Unauthorized' },
      '404': { $ref: '#/components/responses/NotFound' },
      '503': { $ref: '#/components/responses/NotReady' },
    },
  });
  kit.openapi.add('GET', CARD_PATH, cardOperation('a2a_agent_card'));
  kit.openapi.add('GET', LEGACY_CARD_PATH, cardOperation('a2a_agent_card_legacy'));
  kit.openapi.add('POST', RPC_PATH, {
    operationId: 'a2a_jsonrpc',
    summary: 'A2A JSON-RPC: message/send (runs a session through the agent), tasks/get, tasks/cancel.',
    tags: ['a2a'],
    requestBody: { required: true, content: { 'application/json': { schema: { type: 'object' } } } },
    responses: {
      '200': {
        description: 'A JSON-RPC 2.0 response (result or error).',
        content: { 'application/json': { schema: { type: 'object' } } },
      },
      '401': { $ref: '#/components/responses/Unauthorized' },
      '404': { $ref: '#/components/responses/NotFound' },
      '503': { $ref: '#/components/responses/NotReady' },
    },
  });
}
