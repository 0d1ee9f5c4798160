/**
 * `POST /v1/chat/completions` in front of the middleware chain (issue 17 item 3, branch p-leanio):
 * the span check, bearer auth, the store's state and the body limit decided by one synchronous
 * gate (`frontGate`, src/surfaces/http/index.ts) instead of five async middleware, with every
 * answer as before: the refusals' status, body and headers, the gauge registered on the first
 * request, a traced request still a span (through the chain), a request before the App exists a
 * 503 `App not ready`, the official client's stream.
 */
import { describe, expect, it } from 'vitest';
import { createHttpApp } from '../../src/surfaces/http/index';
import { reply } from '../helpers/fake-provider';
import { makeTestApp } from '../helpers/make-test-app';
import { leastPromises } from '../helpers/promises';
import { compatServer, streamedAnswer, TOKEN } from './compat-helpers';

describe('the compat route in front of the middleware', () => {
  it('COMPAT-PERF-130: POST /v1/chat/completions is matched ahead of every middleware, and a refused request makes fewer promises than one refused by the chain', async () => {
    const app = await makeTestApp();
    const hono = createHttpApp(app, { token: 'front-token', allowNoAuth: false });
    const routes = hono.routes;
    const front = routes.findIndex((r) => r.method === 'POST' && r.path === '/v1/chat/completions');
    const firstMiddleware = routes.findIndex((r) => r.method === 'ALL' && r.path === '/*');
    expect(front).toBeGreaterThanOrEqual(0);
    expect(firstMiddleware).toBeGreaterThanOrEqual(0);
    expect(front).toBeLessThan(firstMiddleware);

    const refuse = (path: string, method: string) => async () => {
      const response = await hono.request(path, {
        method,
        headers: { authorization: 'Bearer wrong', 'content-type': 'application/json', 'content-length': '2' },
        body: method === 'POST' ? '{}' : undefined,
      });
      expect(response.status).toBe(401);
      await response.text();
    };
    // Both refused by the bearer check: the posture route after the chain's three async layers
    // (the 405 check, the span check, auth), the compat route by its gate.
    const posture = await leastPromises(refuse('/v1/openai-compat/posture', 'GET'));
    const compat = await leastPromises(refuse('/v1/chat/completions', 'POST'));
    expect(compat).toBeLessThanOrEqual(posture - 3);
  });

  it('COMPAT-PERF-131: the gate answers as the chain did: 401 without or with a wrong bearer, 503 while the store is down, 413 over the declared limit, each the flat body', async () => {
    const server = await compatServer([reply().text('fine')]);
    const body = JSON.stringify({ model: 'fake/m1', messages: [{ role: 'user', content: 'hi' }] });
    const send = (headers: Record<string, string>, payload = body) =>
      fetch(`${server.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...headers },
        body: payload,
      });

    const missing = await send({});
    expect(missing.status).toBe(401);
    expect(missing.headers.get('www-authenticate')).toBe('Bearer realm="svc"');
    expect(missing.headers.get('content-type')).toMatch(/^application\/json/);
    expect(missing.headers.get('x-should-retry')).toBeNull();
    expect(await missing.json()).toEqual({
      error: 'authentication required: missing bearer token',
      code: 401,
    });

    const wrong = await send({ authorization: 'Bearer not-the-token' });
    expect(wrong.status).toBe(401);
    expect(wrong.headers.get('www-authenticate')).toBe('Bearer realm="svc"');
    expect(await wrong.json()).toEqual({ error: 'authentication required: invalid bearer token', code: 401 });

    const storeUnavailable = server.app.storeUnavailable;
    server.app.storeUnavailable = () => 'the store is down (test)';
    try {
      const down = await send({ authorization: `Bearer ${TOKEN}` });
      expect(down.status).toBe(503);
      expect(await down.json()).toEqual({ error: 'the store is down (test)', code: 503 });
      // The bearer is checked first: a wrong one is still a 401 while the store is down.
      expect((await send({ authorization: 'Bearer nope' })).status).toBe(401);
    } finally {
      server.app.storeUnavailable = storeUnavailable;
    }

    const limit = server.app.config.services.http.max_body_bytes;
    const big = await send({ authorization: `Bearer ${TOKEN}` }, 'x'.repeat(limit + 1));
    expect(big.status).toBe(413);
    expect(await big.json()).toEqual({ error: `request body over the ${limit}-byte limit`, code: 413 });

    // Admitted: the official client's stream, and nothing started by the refusals.
    expect(await streamedAnswer(server.client)).toBe('fine');
    expect(server.provider.requests).toHaveLength(1);
  });

  it('COMPAT-PERF-132: a compat request registers the SSE gauge when it is the first request, and with tracing on it is still the server span (through the chain)', async () => {
    const server = await compatServer([reply().text('one'), reply().text('two')]);
    expect(await streamedAnswer(server.client)).toBe('one');
    const metrics = await fetch(`${server.url}/metrics`, { headers: { authorization: `Bearer ${TOKEN}` } });
    expect(await metrics.text()).toMatch(/^svc_sse_subscribers 0$/m);

    const telemetry = server.app.telemetry;
    const spans: { method: string; path: string }[] = [];
    const http = telemetry.http;
    Object.defineProperty(telemetry, 'tracing', { get: () => true, configurable: true });
    telemetry.http = async (request, fn) => {
      spans.push({ method: request.method, path: request.path });
      return fn();
    };
    try {
      expect(await streamedAnswer(server.client)).toBe('two');
    } finally {
      telemetry.http = http;
      Object.defineProperty(telemetry, 'tracing', { get: () => false, configurable: true });
    }
    expect(spans).toEqual([{ method: 'POST', path: '/v1/chat/completions' }]);
  });
});
