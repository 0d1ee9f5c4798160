/**
 * Requests a careless client, a web page or an attacker sends the HTTP service, each found by
 * probing the built server (stop 79). Pins:
 * - a HEAD of a session's event stream holds nothing afterwards (Hono answers HEAD with the GET's
 *   head and dropped the body without cancelling it: each HEAD left a subscriber, an attachment
 *   and a heartbeat until the server ended, and an attached session's permission requests waited);
 * - with no token (`--auth none`) a request addressed to another host name (DNS rebinding) or sent
 *   by another origin's page (CSRF: a `text/plain` POST needs no preflight) is a 403 naming why;
 *   curl-like clients and the server's own pages pass, and a token turns the guard off; the
 *   routes without a bearer (`/healthz`, the web UI) answer only a loopback `Host` too (a page must
 *   not spot svc's version and store under its own name), any `Host` with a token;
 * - path parameters are decoded once (`%25zz` was decoded twice: a 500 "URI malformed");
 * - tool-call arguments nested thousands deep are kept as text, not a 500 (stack overflow);
 * - slow uploads hold no compat run slot (four of them held every slot until Node's timeout);
 * - a request Node or node-server cannot read is a 400 with a JSON body naming why.
 * - a client that hangs up mid-body is logged at debug, not as a failed request with a stack;
 * - a request with no `Host` is that 400 on every route (Node answered an HTTP/1.1 one with an empty
 *   400, and an HTTP/1.0 one reached the hot compat route: a run started).
 */
import { request as httpRequest } from 'node:http';
import { connect } from 'node:net';
import { describe, expect, it } from 'vitest';
import { startHttpServer } from '../../src/surfaces/http/server';
import { reply } from '../helpers/fake-provider';
import { makeTestApp } from '../helpers/make-test-app';
import { until } from '../helpers/until';
import { compatServer, TOKEN } from './compat-helpers';

interface RawAnswer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

/** One request over node:http, every header as given (`Host` included). */
function raw(
  url: string,
  options: { method?: string; path: string; headers?: Record<string, string>; body?: string },
): Promise<RawAnswer> {
  const { port } = new URL(url);
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      {
        host: '127.0.0.1',
        port,
        method: options.method ?? 'GET',
        path: options.path,
        headers: options.headers,
      },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (chunk) => {
          body += chunk;
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
      },
    );
    req.setTimeout(10_000, () => req.destroy(new Error('no answer in 10 s')));
    req.on('error', reject);
    req.end(options.body);
  });
}

/** Bytes written on a socket as they are, and all it answers until it closes. */
function rawSocket(url: string, text: string): Promise<string> {
  const { port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), '127.0.0.1', () => socket.write(text));
    let answer = '';
    socket.setEncoding('utf8');
    socket.setTimeout(10_000, () => socket.destroy(new Error('no answer in 10 s')));
    socket.on('data', (chunk) => {
      answer += chunk;
    });
    socket.on('close', () => resolve(answer));
    socket.on('error', reject);
  });
}

async function openServer(flags: { auth?: 'none'; token?: string }) {
  const app = await makeTestApp();
  const server = await startHttpServer({
    config: app.config,
    flags: { port: 0, ...flags },
    createApp: async () => app,
    http: { sseHeartbeatMs: 0 },
    graceMs: 2000,
  });
  const { onTestFinished } = await import('vitest');
  onTestFinished(() => server.close());
  return { app, server, url: server.url, host: new URL(server.url).host };
}

const subscribers = async (url: string, headers: Record<string, string> = {}) => {
  const metrics = await (await fetch(`${url}/metrics`, { headers })).text();
  return Number(/^svc_sse_subscribers (\d+)$/m.exec(metrics)?.[1]);
};

describe('hostile HTTP requests', () => {
  it('a HEAD of a session event stream answers its head and holds no stream, subscriber or attachment', async () => {
    const { app, url, host } = await openServer({ auth: 'none' });
    const { session } = await (
      await fetch(`${url}/v1/sessions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: '{}',
      })
    ).json();
    for (let i = 0; i < 5; i++) {
      const head = await raw(url, {
        method: 'HEAD',
        path: `/v1/sessions/${session.id}/events`,
        headers: { host },
      });
      expect(head.status).toBe(200);
      expect(head.headers['content-type']).toBe('text/event-stream; charset=utf-8');
      expect(head.body).toBe('');
    }
    await until(async () => (await subscribers(url)) === 0, 'every HEAD stream torn down');
    expect(app.agent.permissions.attachments(session.id)).toEqual([]);
    // A GET still streams and counts while it is open.
    const controller = new AbortController();
    const stream = await fetch(`${url}/v1/sessions/${session.id}/events`, { signal: controller.signal });
    expect(stream.status).toBe(200);
    expect(await subscribers(url)).toBe(1);
    controller.abort();
    await until(async () => (await subscribers(url)) === 0, 'the GET stream torn down');
  });

  it('with no token, another host name or another origin is a 403 naming why; curl and own pages pass', async () => {
    const { url, host } = await openServer({ auth: 'none' });
    const post = (headers: Record<string, string>) =>
      raw(url, {
        method: 'POST',
        path: '/v1/sessions',
        headers: { host, 'content-type': 'text/plain', ...headers },
        body: '{"title":"from a page"}',
      });
    const rebound = await post({ host: `evil.example:${new URL(url).port}` });
    expect(rebound.status).toBe(403);
    expect(JSON.parse(rebound.body).error).toEqual({
      type: 'forbidden',
      message: expect.stringMatching(
        /^Host "evil\.example:\d+" is not a loopback name: with no token \(--auth none\) svc answers only requests addressed to localhost, 127\.0\.0\.1 or \[::1\], a guard against DNS rebinding; set a token/,
      ),
    });
    const csrf = await post({ origin: 'http://evil.example' });
    expect(csrf.status).toBe(403);
    expect(JSON.parse(csrf.body).error.message).toMatch(
      /^a request from the web page at "http:\/\/evil\.example" is refused: with no token \(--auth none\) only this server's own pages may call it/,
    );
    expect((await post({ origin: 'null' })).status).toBe(403);
    expect((await post({ 'sec-fetch-site': 'cross-site' })).status).toBe(403);
    // The compat surface's own front route, in its flat style.
    const compat = await raw(url, {
      method: 'POST',
      path: '/v1/chat/completions',
      headers: { host, origin: 'http://evil.example', 'content-type': 'text/plain', 'content-length': '2' },
      body: '{}',
    });
    expect(compat.status).toBe(403);
    expect(JSON.parse(compat.body)).toEqual({ error: expect.stringContaining('is refused'), code: 403 });
    // A GET the page could embed (an event stream, a transcript) too.
    expect(
      (await raw(url, { path: '/v1/sessions', headers: { host, 'sec-fetch-site': 'cross-site' } })).status,
    ).toBe(403);
    // Admitted: no browser headers (curl, SDKs), this server's own page, a localhost name.
    expect((await post({})).status).toBe(201);
    expect((await post({ origin: url, 'sec-fetch-site': 'same-origin' })).status).toBe(201);
    expect((await post({ host: `localhost:${new URL(url).port}` })).status).toBe(201);
    expect((await post({ host: `app.localhost:${new URL(url).port}` })).status).toBe(201);
  });

  it('with no token, /healthz and the web UI answer only a loopback Host (DNS rebinding); with a token any Host', async () => {
    const { url, host } = await openServer({ auth: 'none' });
    const port = new URL(url).port;
    for (const path of ['/', '/index.html', '/favicon.svg', '/assets/index.js', '/healthz']) {
      for (const rebound of ['evil.example', `evil.example:${port}`, `127.0.0.1.evil.example:${port}`]) {
        const answer = await raw(url, { path, headers: { host: rebound } });
        expect(answer.status, `${path} with Host ${rebound}`).toBe(403);
        expect(JSON.parse(answer.body).error).toEqual({
          type: 'forbidden',
          message: expect.stringContaining('is not a loopback name'),
        });
        expect(answer.body).not.toContain('schema_version');
      }
    }
    // A loopback Host (and no Host at all, curl's HTTP/1.0) still gets the health answer and the page.
    for (const loopback of [host, `localhost:${port}`, `[::1]:${port}`, `app.localhost:${port}`]) {
      const health = await raw(url, { path: '/healthz', headers: { host: loopback } });
      expect(health.status, loopback).toBe(200);
      expect(JSON.parse(health.body)).toMatchObject({ ok: true, version: expect.any(String) });
      expect([200, 503]).toContain((await raw(url, { path: '/', headers: { host: loopback } })).status);
    }
    expect((await fetch(`${url}/healthz`)).status).toBe(200);

    const withToken = await openServer({ token: 'hostile-test-token-2' });
    const probed = await raw(withToken.url, { path: '/healthz', headers: { host: '10.0.0.7:7420' } });
    expect(probed.status).toBe(200);
    expect(JSON.parse(probed.body)).toMatchObject({ ok: true });
    expect([200, 503]).toContain(
      (await raw(withToken.url, { path: '/', headers: { host: 'svc.example.com' } })).status,
    );
  });

  it('with a token, a right bearer from another origin passes (the token is what protects it)', async () => {
    const { url } = await openServer({ token: 'hostile-test-token-1' });
    const answer = await raw(url, {
      path: '/v1/sessions',
      headers: {
        host: 'svc.example.com',
        origin: 'https://dashboard.example.com',
        authorization: 'Bearer hostile-test-token-1',
      },
    });
    expect(answer.status).toBe(200);
  });

  it('path parameters are decoded once: %25 is "%", a malformed escape a 400, never a 500', async () => {
    const { url, host } = await openServer({ auth: 'none' });
    const events = await raw(url, { path: '/v1/openai-compat/runs/%25zz/events', headers: { host } });
    expect(events.status).toBe(200);
    expect(JSON.parse(events.body)).toMatchObject({ request_id: '%zz', total: 0, events: null });
    const malformed = await raw(url, { path: '/v1/openai-compat/runs/%E0%A4%A/events', headers: { host } });
    expect(malformed.status).toBe(200);
    expect(JSON.parse(malformed.body)).toMatchObject({ total: 0 });
    const percent = await raw(url, { method: 'DELETE', path: '/v1/sessions/%25', headers: { host } });
    expect(percent.status).toBe(404);
    expect(JSON.parse(percent.body).error.message).toContain('"%"');
    const bad = await raw(url, { method: 'DELETE', path: '/v1/sessions/%ZZ', headers: { host } });
    expect(bad.status).toBe(400);
    expect(JSON.parse(bad.body).error.message).toContain('expected a percent-encoded path segment');
  });

  it('a number in the query is decimal: 0x10, 1e3 and Infinity are a 400 naming the parameter', async () => {
    const { url, host } = await openServer({ auth: 'none' });
    for (const limit of ['0x10', '1e3', 'Infinity', '0b1']) {
      const answer = await raw(url, { path: `/v1/sessions?limit=${limit}`, headers: { host } });
      expect(answer.status, limit).toBe(400);
      expect(JSON.parse(answer.body).error.message).toContain('limit');
    }
    expect((await raw(url, { path: '/v1/sessions?limit=16', headers: { host } })).status).toBe(200);
  });

  it('a request Node cannot parse, or with a Host that is no host name, is a 400 with a JSON body', async () => {
    const { url } = await openServer({ auth: 'none' });
    const parse = await rawSocket(url, 'GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nBad Header: x\r\n\r\n');
    expect(parse).toMatch(/^HTTP\/1\.1 400 Bad Request\r\n/);
    expect(JSON.parse(parse.slice(parse.indexOf('\r\n\r\n') + 4))).toEqual({
      error: {
        type: 'invalid_input',
        message: expect.stringMatching(/^bad request: the HTTP request could not be parsed \(.+\)$/),
      },
    });
    const host = await rawSocket(url, 'GET /healthz HTTP/1.1\r\nHost: a b\r\nConnection: close\r\n\r\n');
    expect(host).toMatch(/^HTTP\/1\.1 400 /);
    expect(JSON.parse(host.slice(host.indexOf('\r\n\r\n') + 4))).toEqual({
      error: {
        type: 'invalid_input',
        message: expect.stringMatching(/^bad request: Invalid (URL|host header)$/),
      },
    });
  });

  it('HTTP-PROBE-1: a request with no Host is the JSON 400 on every route, the hot compat route included', async () => {
    const { url } = await openServer({ auth: 'none' });
    const body = '{"messages":[{"role":"user","content":"hi"}]}';
    const requests = [
      'GET /healthz HTTP/1.1\r\n\r\n',
      'GET /v1/sessions HTTP/1.1\r\n\r\n',
      'GET /v1/sessions HTTP/1.0\r\n\r\n',
      `POST /v1/chat/completions HTTP/1.0\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`,
      `POST /v1/chat/completions HTTP/1.1\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`,
    ];
    const message = 'bad request: Missing host header';
    for (const request of requests) {
      const answer = await rawSocket(url, request);
      expect(answer, request).toMatch(/^HTTP\/1\.1 400 Bad Request\r\n/);
      // The compat routes' errors are flat (the contract's compat error body).
      const expected = request.includes('/v1/chat/completions')
        ? { error: message, code: 400 }
        : { error: { type: 'invalid_input', message } };
      expect(JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4)), request).toEqual(expected);
    }
  });

  it('HTTP-PROBE-2: a client that hangs up mid-body is no logged failure (it was an error with a stack)', async () => {
    const { app, server, url } = await openServer({ auth: 'none' });
    const { port } = new URL(url);
    const paths = ['/v1/sessions', '/v1/chat/completions'];
    for (const path of paths) {
      const socket = connect(Number(port), '127.0.0.1');
      await new Promise<void>((resolve) => socket.once('connect', resolve));
      socket.write(
        `POST ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"ti`,
      );
      // Hang up once the server is reading the body (it counts as in flight).
      await until(() => server.bodyBytesInFlight > 0, `the body of ${path} in flight`);
      socket.destroy();
      await until(() => server.bodyBytesInFlight === 0, `the body of ${path} let go`);
    }
    const about = (path: string) =>
      app.memoryLog.records.filter((r) => r.path === path && /^http request/.test(r.message));
    await until(() => paths.every((path) => about(path).length > 0), 'a record of each hang-up');
    for (const path of paths) {
      expect(about(path).map((r) => [r.level, r.message])).toEqual([
        ['debug', 'http request abandoned by the client'],
      ]);
    }
  });
});

describe('hostile compat requests', () => {
  it('tool-call arguments nested thousands deep are kept as their text, not a 500', async () => {
    const compat = await compatServer([reply().text('done')]);
    const deep = `${'{"a":'.repeat(5000)}1${'}'.repeat(5000)}`;
    const response = await compat.post('/v1/chat/completions', {
      model: 'fake/m1',
      messages: [
        { role: 'user', content: 'earlier' },
        {
          role: 'assistant',
          content: null,
          tool_calls: [{ id: 'c1', type: 'function', function: { name: 'client_fn', arguments: deep } }],
        },
        { role: 'tool', tool_call_id: 'c1', content: 'ok' },
        { role: 'user', content: 'go on' },
      ],
    });
    expect(response.status).toBe(200);
    expect((await response.json()).choices[0].message.content).toBe('done');
  });

  it('stalled uploads hold no run slot: a whole request is answered while four bodies trickle', async () => {
    const compat = await compatServer([reply().text('answered')], { compat: { max_concurrent_runs: 1 } });
    const { port } = new URL(compat.url);
    const stalled = Array.from({ length: 4 }, () => {
      const socket = connect(Number(port), '127.0.0.1');
      socket.on('error', () => {});
      socket.write(
        `POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${TOKEN}\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"messages"`,
      );
      return socket;
    });
    try {
      const started = Date.now();
      const completion = await compat.client.chat.completions.create({
        model: 'fake/m1',
        messages: [{ role: 'user', content: 'hi' }],
      });
      expect(completion.choices[0].message.content).toBe('answered');
      expect(Date.now() - started).toBeLessThan(10_000);
    } finally {
      for (const socket of stalled) socket.destroy();
    }
  });
});
