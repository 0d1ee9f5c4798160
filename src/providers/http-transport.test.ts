/**
 * ENGINE-STEP-HTTP: the OpenAI-compatible model's streamed request sent with node:http (the App's
 * own fetch) behaves as the same request through fetch (an injected fetch): the same request
 * bytes and headers, the same parts however the answer is cut, the same errors for an HTTP error,
 * a refused connection, a reset, an abort and the provider timeout; sockets kept alive between
 * calls. Both models talk to one loopback server that records what it receives.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import type {
  LanguageModelV3,
  LanguageModelV3CallOptions,
  LanguageModelV3StreamPart,
} from '@ai-sdk/provider';
import { afterEach, describe, expect, it } from 'vitest';
import { buildLanguageModel } from './build-model';
import type { ProviderDeps } from './context';
import type { CredentialStore } from './credential-store';
import { isProcessFetch, leanRequestCount } from './http-transport';
import type { ProviderEntry } from './provider-entries';
import { partsOf } from './stream-parts';

const KEY = 'sk-test-0123456789abcdefghij';

type Handler = (req: IncomingMessage, res: ServerResponse, body: Buffer) => void;

interface Seen {
  raw: string[];
  body: Buffer;
  port: number;
}

const servers: ReturnType<typeof createServer>[] = [];
afterEach(async () => {
  for (const server of servers.splice(0)) {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
});

/** A loopback server answering every request with `handler`; `seen` records each request. */
async function serve(handler: Handler) {
  const seen: Seen[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      seen.push({ raw: req.rawHeaders, body, port: req.socket.remotePort ?? 0 });
      handler(req, res, body);
    });
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return { url: `http://127.0.0.1:${port}/v1`, seen, server };
}

const entry = (baseUrl: string, over: Record<string, unknown> = {}) =>
  ({
    id: 'fake',
    name: 'fake',
    type: 'openai-compat',
    auth: 'api_key',
    base_url: baseUrl,
    api_key_env: [],
    models: [],
    problems: [],
    disabled: false,
    configured: true,
    open_models: true,
    config: { headers: { 'X-Team': 'a' }, ...over },
  }) as unknown as ProviderEntry;

/** The model through node:http (the process's fetch) and the same model through an injected fetch. */
async function models(baseUrl: string, over: Record<string, unknown> = {}) {
  const injected = { calls: 0 };
  const viaFetch: typeof fetch = (input, init) => {
    injected.calls++;
    return globalThis.fetch(input, init);
  };
  const build = (fetchFn: typeof fetch) =>
    buildLanguageModel({
      deps: { fetch: fetchFn } as unknown as ProviderDeps,
      store: {} as CredentialStore,
      entry: entry(baseUrl, over),
      modelId: 'm1',
      credential: { value: KEY, candidates: [], ambiguous: false },
    });
  return { lean: await build(globalThis.fetch), fetch: await build(viaFetch), injected };
}

const base = { id: 'c1', object: 'chat.completion.chunk', created: 1_700_000_000, model: 'm1' };
const chunk = (delta: unknown, finish: string | null = null, extra: Record<string, unknown> = {}) => ({
  ...base,
  choices: [{ index: 0, delta, finish_reason: finish }],
  ...extra,
});
const answer = [
  chunk({ role: 'assistant', content: 'línea ✓ — 😀 ' }),
  chunk({ content: 'ß東京' }),
  chunk({ tool_calls: [{ index: 0, id: 'c1', function: { name: 'read', arguments: '{"p":"é😀"}' } }] }),
  chunk({}, 'tool_calls', { usage: { prompt_tokens: 9, completion_tokens: 3, total_tokens: 12 } }),
];
const sse = (items: unknown[]) =>
  `${items.map((item) => `data: ${JSON.stringify(item)}\n\n`).join('')}data: [DONE]\n\n`;

/** Writes `text` in pieces of the given sizes (in turn), each in its own write a tick apart. */
function streamIn(res: ServerResponse, text: string, sizes: number[]) {
  const bytes = Buffer.from(text, 'utf8');
  res.writeHead(200, { 'content-type': 'text/event-stream' });
  let at = 0;
  let n = 0;
  const next = () => {
    if (at >= bytes.length) return res.end();
    const size = sizes[n++ % sizes.length];
    res.write(bytes.subarray(at, at + size));
    at += size;
    setImmediate(next);
  };
  next();
}

const tools: LanguageModelV3CallOptions['tools'] = [
  {
    type: 'function',
    name: 'read',
    description: `Read a file. ${'Long description. '.repeat(8)}`,
    inputSchema: { type: 'object', properties: { p: { type: 'string' } }, required: ['p'] },
  },
];
const user = (text: string) => ({ role: 'user' as const, content: [{ type: 'text' as const, text }] });
const call = (over: Partial<LanguageModelV3CallOptions> = {}): LanguageModelV3CallOptions => ({
  prompt: [{ role: 'system', content: 'You are svc.' }, user('hi ✓')],
  tools,
  ...over,
});

async function readAll(model: LanguageModelV3, options = call()) {
  const iterator = partsOf(await model.doStream(options));
  const parts: LanguageModelV3StreamPart[] = [];
  for (let next = await iterator.next(); !next.done; next = await iterator.next()) parts.push(next.value);
  return plain(parts);
}

const plain = (value: unknown) =>
  JSON.parse(
    JSON.stringify(value, (_key, v) => (v instanceof Error ? { error: v.name, message: v.message } : v)),
  );

async function errorOf(promise: PromiseLike<unknown>) {
  try {
    await promise;
  } catch (error) {
    return error as Record<string, any>;
  }
  throw new Error('expected a rejection');
}

/** What a caller sees of an error, down its causes; response headers without the date. */
function shapeOf(error: Record<string, any> | undefined): unknown {
  if (!error || typeof error !== 'object') return error;
  const headers = error.responseHeaders ? { ...error.responseHeaders, date: undefined } : undefined;
  return {
    name: error.name,
    message: error.message,
    statusCode: error.statusCode,
    isRetryable: error.isRetryable,
    responseBody: error.responseBody,
    responseHeaders: headers,
    url: error.url,
    code: error.code,
    cause: shapeOf(error.cause),
  };
}

/** Header lines as name → value with lower-case names (the same set whatever the order and case). */
function headerSet(raw: string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (let i = 0; i < raw.length; i += 2) out[raw[i].toLowerCase()] = raw[i + 1];
  return out;
}

describe('ENGINE-STEP-HTTP: the lean request over node:http', () => {
  it('ENGINE-STEP-HTTP-1 sends the bytes and headers fetch sends and gives the same parts, step after step', async () => {
    const server = await serve((_req, res) => streamIn(res, sse(answer), [4096]));
    const { lean, fetch, injected } = await models(server.url);
    const before = leanRequestCount();
    const history = call();
    const second = call({
      prompt: [
        ...history.prompt,
        { role: 'assistant', content: [{ type: 'text', text: 'ok' }] },
        user('again'),
      ],
    });
    const viaFetch = [await readAll(fetch, history), await readAll(fetch, second)];
    const viaLean = [await readAll(lean, history), await readAll(lean, second)];
    expect(viaLean).toEqual(viaFetch);
    expect(injected.calls).toBe(2);
    expect(leanRequestCount() - before).toBe(2);
    const [f1, f2, l1, l2] = server.seen;
    for (const [l, f] of [
      [l1, f1],
      [l2, f2],
    ]) {
      expect(l.body.equals(f.body)).toBe(true);
      expect(headerSet(l.raw)).toEqual(headerSet(f.raw));
    }
    const sent = headerSet(l1.raw);
    expect(sent.authorization).toBe(`Bearer ${KEY}`);
    expect(sent['x-team']).toBe('a');
    expect(sent['user-agent']).toMatch(/ai-sdk\/provider-utils\//);
    expect(sent['accept-encoding']).toBe('gzip, deflate');
    expect(JSON.parse(l2.body.toString()).tools[0].function.description).toBe(
      (tools![0] as { description: string }).description,
    );
    expect(JSON.parse(l2.body.toString()).messages).toHaveLength(4);
  });

  it('ENGINE-STEP-HTTP-2 gives the same parts with the answer cut anywhere, and a gzip answer', async () => {
    let sizes = [1];
    let gzip = false;
    const server = await serve((_req, res) => {
      if (!gzip) return streamIn(res, sse(answer), sizes);
      res.writeHead(200, { 'content-type': 'text/event-stream', 'content-encoding': 'gzip' });
      res.end(gzipSync(sse(answer)));
    });
    const { lean, fetch } = await models(server.url);
    const expected = await readAll(fetch);
    expect(JSON.stringify(expected)).toContain('😀');
    for (sizes of [[1], [2], [3], [5, 1, 7], [64]])
      expect(await readAll(lean), `cut ${sizes}`).toEqual(expected);
    gzip = true;
    expect(await readAll(lean)).toEqual(await readAll(fetch));
  });

  it('ENGINE-STEP-HTTP-3 a 401, a 429 and a 500 (gzipped too) are the errors the fetch path makes', async () => {
    let status = 401;
    let gzip = false;
    const server = await serve((_req, res) => {
      const body = JSON.stringify({
        error: { message: `status ${status}: key ${KEY.slice(0, 6)}`, type: 'x' },
      });
      const headers: Record<string, string> = { 'content-type': 'application/json', 'x-request-id': 'r1' };
      if (status === 429) headers['retry-after'] = '0';
      if (gzip) headers['content-encoding'] = 'gzip';
      res.writeHead(status, headers);
      res.end(gzip ? gzipSync(body) : body);
    });
    const { lean, fetch } = await models(server.url);
    for (const [s, z] of [
      [401, false],
      [429, false],
      [500, false],
      [500, true],
    ] as const) {
      status = s;
      gzip = z;
      const viaFetch = await errorOf(fetch.doStream(call()));
      const viaLean = await errorOf(lean.doStream(call()));
      expect(viaFetch.name).toBe('AI_APICallError');
      expect(shapeOf(viaLean)).toEqual(shapeOf(viaFetch));
      expect(viaLean.statusCode).toBe(s);
      expect(viaLean.isRetryable).toBe(s !== 401);
      expect(viaLean.responseBody).toContain(`status ${s}`);
      expect(JSON.stringify(shapeOf(viaLean))).not.toContain(KEY);
    }
  });

  it('ENGINE-STEP-HTTP-4 a refused connection is the retryable error fetch gives', async () => {
    const server = await serve(() => {});
    const url = server.url;
    server.server.close();
    await new Promise((resolve) => setTimeout(resolve, 10));
    const { lean, fetch } = await models(url);
    const viaFetch = await errorOf(fetch.doStream(call()));
    const viaLean = await errorOf(lean.doStream(call()));
    expect(viaLean.message).toMatch(/^Cannot connect to API: connect ECONNREFUSED 127\.0\.0\.1:\d+$/);
    expect(shapeOf(viaLean)).toEqual(shapeOf(viaFetch));
    expect(viaLean.isRetryable).toBe(true);
  });

  it('ENGINE-STEP-HTTP-5 a connection reset mid-stream, and one before the answer, fail as with fetch', async () => {
    let before = false;
    const server = await serve((req, res) => {
      if (before) return req.socket.destroy();
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(`data: ${JSON.stringify(answer[0])}\n\n`);
      setTimeout(() => req.socket.destroy(), 20);
    });
    const { lean, fetch } = await models(server.url);
    const viaFetch = await errorOf(readAll(fetch));
    const viaLean = await errorOf(readAll(lean));
    expect(viaLean.message).toBe('Failed to process successful response');
    expect(viaLean.cause.message).toBe('terminated');
    expect(shapeOf(viaLean)).toEqual(shapeOf(viaFetch));
    before = true;
    const earlyFetch = await errorOf(fetch.doStream(call()));
    const earlyLean = await errorOf(lean.doStream(call()));
    expect(earlyLean.isRetryable).toBe(true);
    expect(shapeOf(earlyLean)).toEqual(shapeOf(earlyFetch));
  });

  it('ENGINE-STEP-HTTP-6 the caller aborting mid-stream rejects the next read with its reason, as fetch', async () => {
    const server = await serve((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(`data: ${JSON.stringify(answer[0])}\n\n`);
    });
    const { lean, fetch } = await models(server.url);
    for (const model of [fetch, lean]) {
      const abort = new AbortController();
      const parts = partsOf(await model.doStream(call({ abortSignal: abort.signal })));
      const seen: string[] = [];
      for (let next = await parts.next(); !next.done; next = await parts.next()) {
        seen.push(next.value.type);
        if (next.value.type === 'text-delta') break;
      }
      expect(seen).toEqual(['stream-start', 'response-metadata', 'text-start', 'text-delta']);
      const pending = parts.next();
      abort.abort();
      expect(await errorOf(pending)).toBe(abort.signal.reason);
      const early = new AbortController();
      early.abort();
      expect(await errorOf(model.doStream(call({ abortSignal: early.signal })))).toBe(early.signal.reason);
    }
  });

  it('ENGINE-STEP-HTTP-7 late headers are the provider timeout; a long stream is not cut', async () => {
    let slow = false;
    const server = await serve((_req, res) => {
      if (!slow) return;
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      let i = 0;
      const timer = setInterval(() => {
        if (i < answer.length) res.write(`data: ${JSON.stringify(answer[i++])}\n\n`);
        else {
          clearInterval(timer);
          res.end('data: [DONE]\n\n');
        }
      }, 120);
    });
    const { lean, fetch } = await models(server.url, { timeout_seconds: 0.25 });
    const viaFetch = await errorOf(fetch.doStream(call()));
    const viaLean = await errorOf(lean.doStream(call()));
    expect(viaLean.name).toBe('TimeoutError');
    expect(viaLean.message).toBe('fake: no response within 0.25 s (providers.fake.timeout_seconds)');
    expect(shapeOf(viaLean)).toEqual(shapeOf(viaFetch));
    slow = true;
    const parts = await readAll(lean);
    expect(parts.at(-1).type).toBe('finish');
    expect(parts).toEqual(await readAll(fetch));
  });

  it('ENGINE-STEP-HTTP-8 keeps the connection alive across calls', async () => {
    const server = await serve((_req, res) => streamIn(res, sse(answer), [4096]));
    const { lean } = await models(server.url);
    await readAll(lean);
    await readAll(lean);
    await readAll(lean);
    expect(server.seen).toHaveLength(3);
    expect(new Set(server.seen.map((s) => s.port)).size).toBe(1);
  });

  it('ENGINE-STEP-HTTP-9 a redirect is asked again through fetch, as sendOnce does', async () => {
    const server = await serve((req, res) => {
      if (req.url === '/v1/chat/completions') {
        res.writeHead(307, { location: '/v2/chat/completions' });
        return res.end();
      }
      streamIn(res, sse(answer), [4096]);
    });
    const { lean, fetch } = await models(server.url);
    expect(await readAll(lean)).toEqual(await readAll(fetch));
    // fetch: the bytes (not followed), then the text, followed; node:http: the bytes, then the same.
    expect(server.seen).toHaveLength(6);
    for (const seen of server.seen) expect(seen.body.equals(server.seen[0].body)).toBe(true);
  });

  it('ENGINE-STEP-HTTP-11 a base URL with credentials fails as fetch fails it', async () => {
    const server = await serve((_req, res) => streamIn(res, sse(answer), [4096]));
    const { lean, fetch } = await models(server.url.replace('http://', 'http://user:secret@'));
    const viaFetch = await errorOf(fetch.doStream(call()));
    const viaLean = await errorOf(lean.doStream(call()));
    expect(viaLean.name).toBe('TypeError');
    expect(shapeOf(viaLean)).toEqual(shapeOf(viaFetch));
    expect(server.seen).toHaveLength(0);
  });

  it('ENGINE-STEP-HTTP-10 speaks HTTPS with the headers fetch sends there', async (context) => {
    const dir = mkdtempSync(join(tmpdir(), 'svc-https-'));
    try {
      execFileSync(
        'openssl',
        [
          'req',
          '-x509',
          '-newkey',
          'rsa:2048',
          '-nodes',
          '-days',
          '1',
          '-subj',
          '/CN=localhost',
          '-addext',
          'subjectAltName=IP:127.0.0.1',
          '-keyout',
          join(dir, 'key.pem'),
          '-out',
          join(dir, 'cert.pem'),
        ],
        { stdio: 'ignore' },
      );
    } catch {
      rmSync(dir, { recursive: true, force: true });
      context.skip('no openssl to make a certificate');
    }
    const seen: Seen[] = [];
    const server = createHttpsServer(
      { key: readFileSync(join(dir, 'key.pem')), cert: readFileSync(join(dir, 'cert.pem')) },
      (req, res) => {
        const chunks: Buffer[] = [];
        req.on('data', (chunk: Buffer) => chunks.push(chunk));
        req.on('end', () => {
          seen.push({ raw: req.rawHeaders, body: Buffer.concat(chunks), port: req.socket.remotePort ?? 0 });
          streamIn(res, sse(answer), [7]);
        });
      },
    );
    rmSync(dir, { recursive: true, force: true });
    servers.push(server as unknown as ReturnType<typeof createServer>);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const url = `https://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
    const previous = process.env.NODE_TLS_REJECT_UNAUTHORIZED;
    process.env.NODE_TLS_REJECT_UNAUTHORIZED = '0';
    try {
      const { lean, fetch } = await models(url);
      const before = leanRequestCount();
      expect(await readAll(lean)).toEqual(await readAll(fetch));
      expect(await readAll(lean)).toEqual(await readAll(fetch));
      expect(leanRequestCount() - before).toBe(2);
      const [f1, l1, , l2] = seen;
      expect(l1.body.equals(f1.body)).toBe(true);
      expect(headerSet(l1.raw)).toEqual(headerSet(f1.raw));
      expect(headerSet(l1.raw)['accept-encoding']).toBe('br, gzip, deflate');
      expect(l2.port).toBe(l1.port);
    } finally {
      if (previous === undefined) delete process.env.NODE_TLS_REJECT_UNAUTHORIZED;
      else process.env.NODE_TLS_REJECT_UNAUTHORIZED = previous;
    }
  });

  it('ENGINE-STEP-HTTP-12 a process that sends fetch through its proxy keeps fetch', () => {
    const saved = { proxy: process.env.NODE_USE_ENV_PROXY, options: process.env.NODE_OPTIONS };
    const restore = (name: 'NODE_USE_ENV_PROXY' | 'NODE_OPTIONS', value: string | undefined) => {
      if (value === undefined) delete process.env[name];
      else process.env[name] = value;
    };
    try {
      delete process.env.NODE_USE_ENV_PROXY;
      process.env.NODE_OPTIONS = '--max-old-space-size=512';
      expect(isProcessFetch(globalThis.fetch)).toBe(true);
      expect(isProcessFetch((...args: Parameters<typeof fetch>) => fetch(...args))).toBe(false);
      process.env.NODE_USE_ENV_PROXY = '1';
      expect(isProcessFetch(globalThis.fetch)).toBe(false);
      delete process.env.NODE_USE_ENV_PROXY;
      process.env.NODE_OPTIONS = '--max-old-space-size=512 --use-env-proxy';
      expect(isProcessFetch(globalThis.fetch)).toBe(false);
    } finally {
      restore('NODE_USE_ENV_PROXY', saved.proxy);
      restore('NODE_OPTIONS', saved.options);
    }
  });
});
