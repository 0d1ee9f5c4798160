/**
 * The HTTP adapter's own rules (spec, Errors; issue 5 "Bad input and limits"). Pins:
 * - every registered tool with an http binding is served;
 * - bad query values are named (`invalid after_id`), bodies over the limit 413, invalid JSON 400,
 *   unknown routes 404, wrong method 405 with Allow;
 * - protected readout routes answer 503 `App not ready` until ready; /healthz says ready=false;
 * - GET /v1/openapi.json is a valid OpenAPI 3.1 document listing every served route, with the
 *   zod descriptions as parameter docs, and needs the bearer like everything else;
 * - extension routes plug in through `extend` (routes, SSE tracking, OpenAPI docs).
 */
import { Validator } from '@seriousme/openapi-schema-validator';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createHttpApp, openSseStream } from '../../src/surfaces/http/index';
import { bindingsOf } from '../../src/surfaces/http/mount-tools';
import { openApiPath } from '../../src/surfaces/http/openapi';
import { defineTool } from '../../src/tools/core/define-tool';
import { allTools } from '../../src/tools/index';
import { makeTestApp } from '../helpers/make-test-app';
import { sseReader } from './sse-reader';

const echo = defineTool({
  name: 'http_test_echo',
  family: 'test',
  tag: 'primitive',
  description: 'Echo the body back. Test-only.',
  input: z.strictObject({
    text: z.string().describe('What to echo.'),
    times: z.number().int().min(1).default(1).describe('How many times.'),
  }),
  mutates: false,
  surfaces: { http: { method: 'POST', path: '/v1/test-echo' } },
  run: async (_ctx, input) => ({ echoed: input.text.repeat(input.times) }),
});

const json = async (response: Response) => (await response.json()) as any;

describe('HTTP adapter', () => {
  it('serves every registered tool that has an http binding', async () => {
    const app = await makeTestApp();
    const hono = createHttpApp(app, { allowNoAuth: true });
    const served = app.tools.registered().flatMap((tool) => bindingsOf(tool).map((b) => ({ tool, b })));
    expect(served.map(({ b }) => `${b.method} ${b.path}`)).toEqual(
      expect.arrayContaining([
        'GET /v1/config-status',
        'GET /v1/workflow-tools',
        'GET /v1/primitive-tools',
        'GET /v1/sessions/:id/retained-events',
      ]),
    );
    for (const { tool, b } of served) {
      const example = (tool.examples?.[0] ?? {}) as Record<string, unknown>;
      let path = b.path;
      for (const [param, field] of Object.entries(b.params ?? {}))
        path = path.replace(`:${param}`, String(example[field]));
      const response = await hono.request(path, { method: b.method });
      // Mounted: either not a 404, or the tool's own JSON not_found for the example's unknown id
      // (e.g. GET /v1/agent-runs/{run_id}/trace on an empty ledger), never the router's.
      if (response.status === 404) {
        expect(await json(response), `${b.method} ${b.path}`).toMatchObject({ error: { type: 'not_found' } });
      }
    }
  });

  it('answers 404 for an unknown route and 405 with Allow for a wrong method', async () => {
    const hono = createHttpApp(await makeTestApp(), { allowNoAuth: true });
    const missing = await hono.request('/v1/nothing-here');
    expect(missing.status).toBe(404);
    expect(await json(missing)).toEqual({
      error: { message: 'no route GET /v1/nothing-here', type: 'not_found' },
    });
    const compat = await hono.request('/v1/images/generations', { method: 'POST', body: '{}' });
    expect(compat.status).toBe(404);
    const wrong = await hono.request('/v1/config-status', { method: 'DELETE' });
    expect(wrong.status).toBe(405);
    expect(wrong.headers.get('allow')).toBe('GET, HEAD');
    expect((await json(wrong)).error.message).toBe('method DELETE not allowed on /v1/config-status');
  });

  it('LIM-06 / HTTP-07: answers 400 for invalid JSON, names bad fields, and 413 over the body limit, with the canonical error body', async () => {
    const app = await makeTestApp({ tools: [...allTools, echo] });
    const hono = createHttpApp(app, { allowNoAuth: true, tools: [...allTools, echo], maxBodyBytes: 1024 });
    const post = (body: string) =>
      hono.request('/v1/test-echo', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body,
      });
    const ok = await post(JSON.stringify({ text: 'ab', times: 2 }));
    expect(ok.status).toBe(200);
    expect(await json(ok)).toEqual({ echoed: 'abab' });
    const bad = await post('{"text": ');
    expect(bad.status).toBe(400);
    expect(await json(bad)).toEqual({ error: { message: 'invalid JSON body', type: 'invalid_input' } });
    const wrongType = await post(JSON.stringify({ text: 1 }));
    expect(wrongType.status).toBe(400);
    expect((await json(wrongType)).error.message).toMatch(/^http_test_echo: text: /);
    const unknown = await post(JSON.stringify({ text: 'a', color: 'red' }));
    expect((await json(unknown)).error.message).toBe('http_test_echo: unknown field color');
    const big = await post(JSON.stringify({ text: 'x'.repeat(2000) }));
    expect(big.status).toBe(413);
    expect((await json(big)).error.message).toBe('request body over the 1024-byte limit');
  });

  it('names a bad query value by its field, out of range as well as malformed', async () => {
    const app = await makeTestApp();
    const session = await app.sessions.create();
    const hono = createHttpApp(app, { allowNoAuth: true });
    for (const bad of ['abc', '2.5', '-1']) {
      const res = await hono.request(`/v1/sessions/${session.id}/observability?recent_runs_limit=${bad}`);
      expect(res.status, bad).toBe(400);
      expect((await json(res)).error.message, bad).toMatch(/^invalid recent_runs_limit/);
    }
    const ok = await hono.request(`/v1/sessions/${session.id}/observability?recent_runs_limit=2`);
    expect(ok.status).toBe(200);
  });

  it('DASH-59 style: protected readout routes answer 503 App not ready until ready', async () => {
    const app = await makeTestApp({ ready: false });
    const hono = createHttpApp(app, { token: 'ready-token-123456' });
    const headers = { authorization: 'Bearer ready-token-123456' };
    for (const path of ['/v1/config-status', '/v1/workflow-tools', '/v1/openapi.json']) {
      const response = await hono.request(path, { headers });
      expect(response.status, path).toBe(503);
      expect(await json(response)).toEqual({ error: { message: 'App not ready', type: 'unavailable' } });
    }
    // Auth still comes first: no bearer is 401, not 503.
    expect((await hono.request('/v1/config-status')).status).toBe(401);
    expect(await json(await hono.request('/healthz'))).toMatchObject({ ok: true, ready: false });
    app.runtime.ready = true;
    expect((await hono.request('/v1/config-status', { headers })).status).toBe(200);
  });

  it('serves /v1/openapi.json: valid OpenAPI 3.1, every served route, bearer required', async () => {
    const app = await makeTestApp({ config: { services: { http: { token: 'openapi-token-123' } } } });
    const hono = createHttpApp(app);
    expect((await hono.request('/v1/openapi.json')).status).toBe(401);
    const response = await hono.request('http://127.0.0.1:9999/v1/openapi.json', {
      headers: { authorization: 'Bearer openapi-token-123' },
    });
    expect(response.status).toBe(200);
    const doc = await json(response);
    const validator = new Validator();
    const result = await validator.validate(doc);
    expect(result, JSON.stringify(result.errors)).toEqual({ valid: true });
    expect(validator.version).toBe('3.1');
    expect(doc.servers).toEqual([{ url: 'http://127.0.0.1:9999' }]);
    expect(doc.components.securitySchemes).toEqual({ bearerAuth: { type: 'http', scheme: 'bearer' } });
    expect(doc.paths['/healthz'].get.security).toEqual([]);

    const expected = app.tools
      .registered()
      .flatMap((tool) => bindingsOf(tool).map((b) => `${b.method.toLowerCase()} ${openApiPath(b.path)}`));
    const documented = Object.entries(doc.paths).flatMap(([path, ops]) =>
      Object.keys(ops as object).map((method) => `${method} ${path}`),
    );
    expect(documented).toEqual(
      expect.arrayContaining([...expected, 'get /v1/sessions/{id}/events', 'get /healthz']),
    );

    const retained = doc.paths['/v1/sessions/{id}/retained-events'].get;
    expect(retained.operationId).toBe('list_session_events');
    expect(retained['x-svc-mcp-tool']).toBe('svc_list_session_events');
    expect(retained.parameters).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ name: 'id', in: 'path', required: true }),
        expect.objectContaining({
          name: 'after_id',
          in: 'query',
          required: false,
          description: expect.stringContaining('Last-Event-ID'),
        }),
      ]),
    );
    // The path parameter replaces the body/query field it fills.
    expect(retained.parameters.find((p: { name: string }) => p.name === 'session_id')).toBeUndefined();
    const events = doc.paths['/v1/sessions/{id}/events'].get;
    expect(events.parameters.map((p: { name: string }) => p.name)).toEqual([
      'id',
      'include_snapshot',
      'Last-Event-ID',
      'attach',
      'last_event_id',
    ]);
  });

  it('documents a POST tool as a JSON request body from its zod schema', async () => {
    const tools = [...allTools, echo];
    const app = await makeTestApp({ tools });
    const hono = createHttpApp(app, { allowNoAuth: true, tools });
    const doc = await json(await hono.request('/v1/openapi.json'));
    expect(doc.paths['/v1/test-echo'].post.requestBody).toEqual({
      required: true,
      content: {
        'application/json': {
          schema: {
            type: 'object',
            properties: {
              text: { type: 'string', description: 'What to echo.' },
              times: {
                type: 'integer',
                minimum: 1,
                maximum: Number.MAX_SAFE_INTEGER,
                default: 1,
                description: 'How many times.',
              },
            },
            required: ['text'],
            additionalProperties: false,
          },
        },
      },
    });
    expect((await new Validator().validate(doc)).valid).toBe(true);
  });

  it('leaves gated-off tools out of the document and answers their routes 404', async () => {
    const gated = defineTool({ ...echo, name: 'http_test_gated', gate: () => 'closed for the test' });
    const tools = [...allTools, gated];
    const app = await makeTestApp({ tools });
    const hono = createHttpApp(app, { allowNoAuth: true, tools });
    const doc = await json(await hono.request('/v1/openapi.json'));
    expect(doc.paths['/v1/test-echo']).toBeUndefined();
    const response = await hono.request('/v1/test-echo', { method: 'POST', body: '{"text":"a"}' });
    expect(response.status).toBe(404);
  });

  it('mounts extension routes with shared stream tracking and OpenAPI docs', async () => {
    const app = await makeTestApp();
    const hono = createHttpApp(app, {
      allowNoAuth: true,
      extend(h, appRef, kit) {
        h.get('/v1/test-stream', (c) => {
          const { stream, response } = openSseStream({
            heartbeatMs: 0,
            tracker: kit.streams,
            signal: c.req.raw.signal,
          });
          stream.send({ event: 'hello', id: 1, data: JSON.stringify({ ready: appRef()?.runtime.ready }) });
          return response;
        });
        kit.openapi.add('GET', '/v1/test-stream', {
          operationId: 'test_stream',
          responses: { '200': { description: 'SSE' } },
        });
        expect(kit.errorStyleFor('/v1/chat/completions')).toBe('flat');
      },
    });
    const reader = sseReader(await hono.request('/v1/test-stream'));
    expect(await reader.next()).toMatchObject({ event: 'hello', id: '1', json: { ready: true } });
    await reader.cancel();
    const doc = await json(await hono.request('/v1/openapi.json'));
    expect(doc.paths['/v1/test-stream'].get.operationId).toBe('test_stream');
  });

  it('mounts route families from `extensions` before `extend`, behind auth', async () => {
    const app = await makeTestApp();
    const order: string[] = [];
    const hono = createHttpApp(app, {
      token: 'ext-token-123456',
      extensions: [
        (h) => {
          order.push('family');
          h.get('/v1/family', (c) => c.json({ ok: true }));
        },
      ],
      extend: () => {
        order.push('extend');
      },
    });
    expect(order).toEqual(['family', 'extend']);
    expect((await hono.request('/v1/family')).status).toBe(401);
    const response = await hono.request('/v1/family', {
      headers: { authorization: 'Bearer ext-token-123456' },
    });
    expect(await response.json()).toEqual({ ok: true });
  });
});
