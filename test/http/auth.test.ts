/**
 * Bearer authentication (spec, Authentication → HTTP server authentication; Errors). Pins, through
 * `app.request` and against a real server on 127.0.0.1:0:
 * - token configured: missing or wrong bearer → 401, right bearer → 200 (AUTH-42, 45, 46);
 * - no token, AllowNoAuth false → 401 `authentication required` (AUTH-47);
 * - no token, AllowNoAuth true → 200 without a bearer (AUTH-48);
 * - the token may come from [services.http], SVC_HTTP_TOKEN or the option (AUTH-43, 44);
 * - every route but GET /healthz is protected, unknown ones included (HTTP-01, AUTH-49, AUTH-50);
 * - compat paths answer 401 with the flat body.
 */
import { describe, expect, it } from 'vitest';
import type { App } from '../../src/app';
import { safeEqual } from '../../src/surfaces/http/auth';
import { createHttpApp } from '../../src/surfaces/http/index';
import { startHttpServer } from '../../src/surfaces/http/server';
import { makeTestApp } from '../helpers/make-test-app';

const TOKEN = 'svc-test-token-1234';
const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

/** A readout route for the matrix (the dashboard route, in its text style, has its own test). */
const ROUTE = '/v1/config-status';

type Condition = 'token' | 'no-token-closed' | 'no-token-open';

async function appFor(condition: Condition): Promise<App> {
  const http =
    condition === 'token'
      ? { token: TOKEN }
      : condition === 'no-token-open'
        ? { allow_no_auth: true }
        : { allow_no_auth: false };
  return makeTestApp({ config: { services: { http } } });
}

describe('bearer auth matrix (app.request)', () => {
  it('AUTH-42, AUTH-44: a token in [services.http] is required and the right bearer passes', async () => {
    const hono = createHttpApp(await appFor('token'));
    const response = await hono.request(ROUTE, { headers: bearer(TOKEN) });
    expect(response.status).toBe(200);
    // The scheme is case-insensitive (RFC 6750).
    expect((await hono.request(ROUTE, { headers: { authorization: `bearer ${TOKEN}` } })).status).toBe(200);
  });

  it('AUTH-45: a configured token and a missing bearer give 401', async () => {
    const hono = createHttpApp(await appFor('token'));
    const response = await hono.request(ROUTE);
    expect(response.status).toBe(401);
    expect(response.headers.get('www-authenticate')).toBe('Bearer realm="svc"');
    expect(await response.json()).toEqual({
      error: { message: 'authentication required: missing bearer token', type: 'unauthorized' },
    });
  });

  it('AUTH-46: a configured token and a wrong bearer give 401', async () => {
    const hono = createHttpApp(await appFor('token'));
    for (const headers of [
      bearer('wrong-token-xxxxxxxx'),
      bearer(`${TOKEN}x`),
      bearer(TOKEN.slice(0, -1)),
      { authorization: `Basic ${TOKEN}` },
      { authorization: TOKEN },
    ]) {
      const response = await hono.request(ROUTE, { headers });
      expect(response.status, JSON.stringify(headers)).toBe(401);
    }
  });

  it('AUTH-47: no token and AllowNoAuth false give 401 authentication required', async () => {
    const hono = createHttpApp(await appFor('no-token-closed'));
    for (const headers of [{}, bearer('anything-at-all')]) {
      const response = await hono.request(ROUTE, { headers });
      expect(response.status).toBe(401);
      expect(await response.json()).toEqual({
        error: { message: 'authentication required', type: 'unauthorized' },
      });
    }
  });

  it('AUTH-48: no token and AllowNoAuth true give 200 without a bearer', async () => {
    const hono = createHttpApp(await appFor('no-token-open'));
    expect((await hono.request(ROUTE)).status).toBe(200);
  });

  it('AUTH-45, AUTH-46, AUTH-47, AUTH-48: the dashboard route answers the matrix in its text style', async () => {
    const dashboard = '/v1/multiplayer-coordination-dashboard';
    const withToken = createHttpApp(await appFor('token'));
    for (const headers of [{}, bearer('wrong-token-xxxxxxxx')]) {
      const response = await withToken.request(dashboard, { headers });
      expect(response.status).toBe(401);
      expect(await response.text()).toMatch(/^authentication required/);
    }
    expect((await withToken.request(dashboard, { headers: bearer(TOKEN) })).status).toBe(200);
    const closed = await createHttpApp(await appFor('no-token-closed')).request(dashboard);
    expect(closed.status).toBe(401);
    expect(await closed.text()).toBe('authentication required');
    const open = await createHttpApp(await appFor('no-token-open')).request(dashboard);
    expect(open.status).toBe(200);
    expect(((await open.json()) as { schema_version: string }).schema_version).toBe(
      'svc.multiplayer_coordination_dashboard.v1',
    );
  });

  it('AUTH-51: takes the token from SVC_HTTP_TOKEN', async () => {
    const app = await makeTestApp({ env: { HOME: '/nonexistent', SVC_HTTP_TOKEN: TOKEN } });
    const hono = createHttpApp(app);
    expect((await hono.request(ROUTE)).status).toBe(401);
    expect((await hono.request(ROUTE, { headers: bearer(TOKEN) })).status).toBe(200);
  });

  it('AUTH-51: treats an empty token as no token (never matches an empty bearer)', async () => {
    const hono = createHttpApp(await makeTestApp(), { token: '', allowNoAuth: false });
    expect((await hono.request(ROUTE, { headers: { authorization: 'Bearer ' } })).status).toBe(401);
  });

  it('HTTP-01: protects every mounted route, and unknown ones, but not GET /healthz and the web UI files', async () => {
    const app = await appFor('token');
    const hono = createHttpApp(app);
    const routes = hono.routes.filter((r) => r.method !== 'ALL' && r.path !== '/*');
    expect(routes.length).toBeGreaterThan(5);
    // The web UI's static files carry no data (docs/web.md): served without a token, never under /v1.
    const webFiles = new Set(['/', '/index.html', '/assets/:file', '/favicon.svg']);
    for (const route of routes) {
      const path = route.path.replace(/:[A-Za-z0-9_]+(\{[^}]*\})?/g, 'x');
      const response = await hono.request(path, { method: route.method });
      if (route.path === '/healthz') expect(response.status).toBe(200);
      else if (webFiles.has(route.path)) expect(route.method).toBe('GET');
      else expect(response.status, `${route.method} ${route.path}`).toBe(401);
    }
    expect(routes.filter((r) => webFiles.has(r.path)).map((r) => r.path)).toHaveLength(webFiles.size);
    expect((await hono.request('/v1/not-a-route')).status).toBe(401);
    expect((await hono.request('/v1/not-a-route', { headers: bearer(TOKEN) })).status).toBe(404);
  });

  it('AUTH-49, AUTH-50: operator-cognition and operating-mode routes use the same bearer style', async () => {
    const hono = createHttpApp(await appFor('token'));
    expect((await hono.request('/v1/operator-cognition')).status).toBe(401);
    for (const method of ['GET', 'POST', 'DELETE']) {
      const response = await hono.request('/v1/session-operating-mode?session_id=s', { method });
      expect(response.status, method).toBe(401);
    }
    expect((await hono.request('/v1/multiplayer-coordination-dashboard')).status).toBe(401);
  });

  it('answers compat paths with the flat error body', async () => {
    const hono = createHttpApp(await appFor('token'));
    const response = await hono.request('/v1/chat/completions', { method: 'POST', body: '{}' });
    expect(response.status).toBe(401);
    expect(await response.json()).toEqual({
      error: 'authentication required: missing bearer token',
      code: 401,
    });
  });

  it('AUTH-51: compares opaque tokens exactly', () => {
    expect(safeEqual('abc', 'abc')).toBe(true);
    expect(safeEqual('abc', 'abd')).toBe(false);
    expect(safeEqual('abc', 'abcd')).toBe(false);
    expect(safeEqual('', 'a')).toBe(false);
  });
});

describe('bearer auth matrix (real server on 127.0.0.1:0)', () => {
  const cases: { name: string; condition: Condition; headers: Record<string, string>; status: number }[] = [
    { name: 'AUTH-42: token + right bearer', condition: 'token', headers: bearer(TOKEN), status: 200 },
    { name: 'AUTH-45: token + missing bearer', condition: 'token', headers: {}, status: 401 },
    {
      name: 'AUTH-46: token + wrong bearer',
      condition: 'token',
      headers: bearer('nope-nope-nope'),
      status: 401,
    },
    { name: 'AUTH-47: no token, AllowNoAuth false', condition: 'no-token-closed', headers: {}, status: 401 },
    { name: 'AUTH-48: no token, AllowNoAuth true', condition: 'no-token-open', headers: {}, status: 200 },
  ];
  for (const testCase of cases) {
    it(`${testCase.name} → ${testCase.status}`, async () => {
      const app = await appFor(testCase.condition);
      const server = await startHttpServer({
        config: app.config,
        flags: { port: 0 },
        createApp: async () => app,
      });
      try {
        const response = await fetch(`${server.url}${ROUTE}`, { headers: testCase.headers });
        expect(response.status).toBe(testCase.status);
        const health = await fetch(`${server.url}/healthz`);
        expect(health.status).toBe(200);
        if (testCase.condition === 'no-token-closed') {
          expect(((await response.json()) as { error: { message: string } }).error.message).toBe(
            'authentication required',
          );
        } else await response.body?.cancel();
      } finally {
        await server.close();
      }
    });
  }

  it('AUTH-43: the --token flag wins over config and is required', async () => {
    const app = await makeTestApp({ config: { services: { http: { token: 'config-token-123456' } } } });
    const server = await startHttpServer({
      config: app.config,
      flags: { port: 0, token: 'flag-token-abcdef' },
      createApp: async () => app,
    });
    try {
      expect((await fetch(`${server.url}${ROUTE}`, { headers: bearer('config-token-123456') })).status).toBe(
        401,
      );
      expect((await fetch(`${server.url}${ROUTE}`, { headers: bearer('flag-token-abcdef') })).status).toBe(
        200,
      );
    } finally {
      await server.close();
    }
  });

  it('--auth none opens a loopback server without a token; --auth bearer closes it', async () => {
    const open = await makeTestApp();
    const server = await startHttpServer({
      config: open.config,
      flags: { port: 0, auth: 'none' },
      createApp: async () => open,
    });
    try {
      expect((await fetch(`${server.url}${ROUTE}`)).status).toBe(200);
    } finally {
      await server.close();
    }
    const closed = await makeTestApp({ config: { services: { http: { allow_no_auth: true } } } });
    const strict = await startHttpServer({
      config: closed.config,
      flags: { port: 0, auth: 'bearer' },
      createApp: async () => closed,
    });
    try {
      expect((await fetch(`${strict.url}${ROUTE}`)).status).toBe(401);
    } finally {
      await strict.close();
    }
  });
});
