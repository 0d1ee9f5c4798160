/**
 * `POST /v1/chat/completions` served straight from node:http's request event (issue 17 item 3,
 * branch p-noderoute; src/surfaces/http/node-front.ts): a compat request with a declared body
 * length never reaches node-server's Request or Hono, and its answers are the ones Hono's route
 * gives: the same status, headers, body and SSE frames whichever way a request goes (a chunked
 * body, whose length the gate cannot check, still takes Hono's chain).
 */
import { request as httpRequest } from 'node:http';
import type { Hono } from 'hono';
import { describe, expect, it } from 'vitest';
import type { HttpExtension } from '../../src/surfaces/http/index';
import { reply } from '../helpers/fake-provider';
import { leastPromises } from '../helpers/promises';
import { compatServer, TOKEN } from './compat-helpers';

interface RawAnswer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

/** One request over node:http: the body sent with a `content-length`, or chunked (`chunked: true`). */
function send(
  url: string,
  body: string,
  options: { headers?: Record<string, string | string[]>; chunked?: boolean } = {},
): Promise<RawAnswer> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string | string[]> = {
      'content-type': 'application/json',
      ...options.headers,
    };
    if (options.chunked) headers['transfer-encoding'] = 'chunked';
    else headers['content-length'] = String(Buffer.byteLength(body));
    const req = httpRequest(`${url}/v1/chat/completions`, { method: 'POST', headers }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        text += chunk;
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: text }));
      res.on('error', reject);
    });
    req.on('error', reject);
    if (options.chunked) {
      // Two chunks: the body's length is not known from the head.
      const half = Math.floor(body.length / 2);
      req.write(body.slice(0, half));
      req.end(body.slice(half));
    } else req.end(body);
  });
}

/** What must match between the two paths: status, the headers that say something, the body with its ids and times masked. */
function comparable(answer: RawAnswer) {
  const skip = new Set(['date', 'connection', 'keep-alive', 'transfer-encoding']);
  const headers: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(answer.headers)) {
    if (skip.has(name)) continue;
    headers[name] = /^x-(request|svc-run|svc-session)-id$/.test(name) ? 'ID' : value;
  }
  const body = answer.body
    .replace(/chatcmpl-[A-Za-z0-9_-]+/g, 'chatcmpl-ID')
    .replace(/"created":\d+/g, '"created":0')
    .replace(/\b(ses|run)_[A-Za-z0-9_-]+/g, '$1_ID');
  return { status: answer.status, headers, body };
}

/** A family that counts the requests Hono's `fetch` is asked to answer. */
function honoCounter(): { extension: HttpExtension; seen: string[] } {
  const seen: string[] = [];
  const extension = ((hono: Hono) => {
    const fetch = hono.fetch;
    hono.fetch = (request, ...rest) => {
      seen.push(`${request.method} ${new URL(request.url).pathname}`);
      return fetch(request, ...rest);
    };
  }) as HttpExtension;
  return { extension, seen };
}

const auth = { authorization: `Bearer ${TOKEN}` };
const ask = (content: string, extra: Record<string, unknown> = {}) =>
  JSON.stringify({ model: 'fake/m1', messages: [{ role: 'user', content }], ...extra });

describe('the compat route straight from node:http', () => {
  it('COMPAT-PERF-230: a compat request with a declared length never reaches Hono (streamed, JSON, refused); a chunked one, and every other route, still does; the fast request makes fewer promises', async () => {
    const texts = Array.from({ length: 16 }, (_, i) => reply().text(`answer ${i}`));
    const { extension, seen } = honoCounter();
    const server = await compatServer(texts, { http: { extend: extension } });

    const streamed = await send(server.url, ask('one', { stream: true }), { headers: auth });
    expect(streamed.status).toBe(200);
    expect(streamed.body).toContain('"finish_reason":"stop"');
    expect(streamed.body.trimEnd().endsWith('data: [DONE]')).toBe(true);
    const json = await send(server.url, ask('two'), { headers: auth });
    expect(json.status).toBe(200);
    expect(JSON.parse(json.body).choices[0].message.content).toBe('answer 1');
    expect((await send(server.url, ask('three'))).status).toBe(401);
    expect(seen).toEqual([]);

    const chunked = await send(server.url, ask('four', { stream: true }), { headers: auth, chunked: true });
    expect(chunked.body).toContain('"finish_reason":"stop"');
    expect((await fetch(`${server.url}/healthz`)).status).toBe(200);
    expect(seen).toEqual(['POST /v1/chat/completions', 'GET /healthz']);

    // The same streamed request both ways, the least of five each (client's promises included in both).
    const fast = await leastPromises(() =>
      send(server.url, ask('five', { stream: true }), { headers: auth }),
    );
    const viaHono = await leastPromises(() =>
      send(server.url, ask('six', { stream: true }), { headers: auth, chunked: true }),
    );
    expect(fast).toBeLessThanOrEqual(viaHono - 8);
  });

  it('COMPAT-PERF-231: the same answers both ways: streamed and JSON completions, a failing run, a bad body, an unknown session, a refusal, a repeated authorization field, a body over the limit', async () => {
    const server = await compatServer([
      reply().text('streamed text').usage(7, 3),
      reply().text('streamed text').usage(7, 3),
      reply().text('plain text'),
      reply().text('plain text'),
      reply().httpError(400, { error: { message: 'bad upstream' } }),
      reply().httpError(400, { error: { message: 'bad upstream' } }),
    ]);
    const limit = server.app.config.services.http.max_body_bytes;
    const cases: { name: string; body: string; headers?: Record<string, string | string[]> }[] = [
      { name: 'streamed', body: ask('hi', { stream: true, stream_options: { include_usage: true } }) },
      { name: 'json', body: ask('hi') },
      { name: 'failing run', body: ask('fail') },
      { name: 'bad body', body: '{"model": "fake/m1", "messages": [' },
      { name: 'unknown session', body: ask('x'), headers: { 'x-svc-session-id': 'ses_nope' } },
      { name: 'refused', body: ask('x'), headers: { authorization: 'Bearer wrong' } },
      // Two fields: Hono reads them joined ("Bearer …, Bearer …"), which is no token (Node keeps the first).
      {
        name: 'repeated authorization',
        body: ask('x'),
        headers: { authorization: [`Bearer ${TOKEN}`, `Bearer ${TOKEN}`] },
      },
      { name: 'over the limit', body: 'x'.repeat(limit + 1) },
    ];
    for (const item of cases) {
      const headers = { ...auth, ...item.headers };
      const fast = await send(server.url, item.body, { headers });
      const viaHono = await send(server.url, item.body, { headers, chunked: true });
      expect({ name: item.name, ...comparable(fast) }).toEqual({ name: item.name, ...comparable(viaHono) });
    }
    // Each ran twice (the provider saw the four completions and the two failing runs).
    expect(server.provider.requests).toHaveLength(6);
  });

  it('COMPAT-PERF-232: a JSON completion whose client goes away: the request signal aborts, the run is cancelled and the ledger row says disconnected', async () => {
    const server = await compatServer([reply().text('never').hang(30_000)]);
    const body = ask('hang');
    const req = httpRequest(`${server.url}/v1/chat/completions`, {
      method: 'POST',
      headers: {
        ...auth,
        'content-type': 'application/json',
        'content-length': String(Buffer.byteLength(body)),
      },
    });
    req.on('error', () => {});
    req.end(body);
    let runId: string | undefined;
    for (let i = 0; i < 750 && !runId; i++) {
      await new Promise((r) => setTimeout(r, 20));
      const [row] = (await server.app.compatRequests.list({ limit: 1 })).rows;
      if (row && server.provider.requests.length === 1) runId = row.run_id;
    }
    expect(runId).toBeDefined();
    req.destroy();
    let status: string | undefined;
    for (let i = 0; i < 750 && status !== 'cancelled'; i++) {
      await new Promise((r) => setTimeout(r, 20));
      status = (await server.app.runs.get(runId as string))?.status;
    }
    expect(status).toBe('cancelled');
    let ledger: string | undefined;
    for (let i = 0; i < 750 && ledger !== 'disconnected'; i++) {
      await new Promise((r) => setTimeout(r, 20));
      ledger = (await server.app.compatRequests.list({ limit: 1 })).rows[0]?.status;
    }
    expect(ledger).toBe('disconnected');
  });
});
