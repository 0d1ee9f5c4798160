/**
 * The OpenAI-compatible lean path's request sent with node:http / node:https instead of fetch
 * (undici): no Request, Headers or Response objects and no web stream for either body on the
 * success path. The request body's pieces (./request-body.ts: the tool list and the prompt
 * messages as bytes kept from earlier steps) are written to the socket as they are, and the
 * answer is handed on as the `IncomingMessage`'s chunks.
 *
 * It behaves as `fetch` through ./timeout.ts does, for what the lean path does with it:
 * - the same request: URL, method, the caller's headers and the ones undici adds (`accept`,
 *   `accept-language`, `sec-fetch-mode`, `accept-encoding`, `content-length`), the same body bytes;
 *   a compressed answer (gzip, deflate, br) is decompressed as undici does;
 * - a keep-alive `Agent` per origin, kept for the process (at most MAX_SOCKETS sockets each, an
 *   idle socket closed after IDLE_MS or the server's keep-alive hint);
 * - a status outside 2xx: the body is read and handed on as a real `Response`, so the model's
 *   `failedResponseHandler` makes the same `APICallError`; a redirect is asked again through fetch
 *   with the body as text, as `sendOnce` does;
 * - failures are undici's: `TypeError('fetch failed', { cause })` before the answer (the SDK makes
 *   it a retryable `APICallError`), `TypeError('terminated', { cause })` while reading it, the
 *   caller's abort reason as it is, the provider timeout's `TimeoutError` when the headers are
 *   late (a long stream is not cut), and undici's own 300 s headers and body timeouts.
 * Never in an error: the request's headers (the API key).
 * @module
 */
import {
  Agent,
  type ClientRequest,
  request as httpRequest,
  type IncomingMessage,
  type RequestOptions,
} from 'node:http';
import { finished, type Readable } from 'node:stream';
import { bodyPieces, splicedText } from './request-body';
import { responseTimeoutError } from './timeout';

export interface LeanTransportOptions {
  /** The provider's response timeout (`timeout_seconds`). */
  seconds: number;
  provider: string;
  /** The process's fetch with the provider's timeout: a redirect, or a body not a string, goes there. */
  fallback: typeof fetch;
}

/** A successful answer: what the lean path reads of a `Response`, its body the socket's chunks. */
export interface LeanResponse {
  ok: true;
  status: number;
  statusText: string;
  url: string;
  /** As a `Headers` iterates: lower-case names in order, repeated ones joined. */
  headers: [string, string][];
  body: AsyncIterable<Uint8Array>;
}

/** fetch's shape; answers a `LeanResponse` for a 2xx, a real `Response` otherwise. */
export type LeanTransport = (url: string, init: RequestInit) => Promise<LeanResponse | Response>;

/** Sockets per origin at most; more requests wait in the agent's queue. */
export const MAX_SOCKETS = 256;
/** An idle kept-alive socket is closed after this (undici's default keep-alive timeout). */
const IDLE_MS = 4000;
/** undici's default headers and body timeouts (Node's fetch). */
const UNDICI_TIMEOUT_MS = 300_000;
const REDIRECTS = new Set([301, 302, 303, 307, 308]);
const NULL_BODY = new Set([101, 204, 205, 304]);

/**
 * Whether a model's fetch is the process's own (the App's default, nothing injected): only then
 * does its request go by node:http. `SVC_HTTP_TRANSPORT=fetch` keeps fetch for every request.
 */
export function isProcessFetch(fetchFn: typeof fetch): boolean {
  if (fetchFn !== globalThis.fetch || process.env.SVC_HTTP_TRANSPORT === 'fetch') return false;
  // Node 22.21+/24 can send fetch through the environment's proxy; node:http with an agent of
  // its own would not: such a process keeps fetch.
  const flagged =
    process.execArgv.includes('--use-env-proxy') ||
    /(^|\s)--use-env-proxy\b/.test(process.env.NODE_OPTIONS ?? '');
  return !process.env.NODE_USE_ENV_PROXY && !flagged;
}

export function createLeanTransport(options: LeanTransportOptions): LeanTransport {
  const ms = Math.round(options.seconds * 1000);
  return (url, init) => {
    if (typeof init.body !== 'string') return options.fallback(url, init);
    const signal = init.signal ?? undefined;
    if (signal?.aborted) return Promise.reject(signal.reason);
    let target: Target | undefined;
    try {
      target = targetOf(url);
    } catch (error) {
      return Promise.reject(error);
    }
    // A URL with credentials: fetch refuses it, and says so.
    if (!target) return options.fallback(url, init);
    return send(target, url, init as RequestInit & { body: string }, options, ms);
  };
}

interface Target {
  agent: Agent;
  request: typeof httpRequest;
  hostname: string;
  port: string;
  path: string;
  host: string;
  https: boolean;
}

/** Parsed request URLs (a model asks the same one every time), at most a few. */
const targets = new Map<string, Target>();
const agents = new Map<string, Agent>();

function targetOf(url: string): Target | undefined {
  const known = targets.get(url);
  if (known) return known;
  const parsed = new URL(url);
  if (parsed.username || parsed.password) return undefined;
  const https = parsed.protocol === 'https:';
  if (!https && parsed.protocol !== 'http:')
    throw new TypeError('fetch failed', { cause: new Error('unknown scheme') });
  // node:https (and TLS) loaded on the first https origin only.
  const module = https ? process.getBuiltinModule('node:https') : undefined;
  let agent = agents.get(parsed.origin);
  if (!agent) {
    const settings = {
      keepAlive: true,
      maxSockets: MAX_SOCKETS,
      timeout: IDLE_MS,
      scheduling: 'lifo' as const,
    };
    agent = module ? new module.Agent(settings) : new Agent(settings);
    agents.set(parsed.origin, agent);
  }
  const target: Target = {
    agent,
    request: module ? (module.request as typeof httpRequest) : httpRequest,
    hostname: parsed.hostname.replace(/^\[|\]$/g, ''),
    port: parsed.port,
    path: `${parsed.pathname}${parsed.search}`,
    host: parsed.host,
    https,
  };
  if (targets.size >= 64) targets.clear();
  targets.set(url, target);
  return target;
}

let sent = 0;

/** Requests sent by node:http so far in this process (for tests). */
export function leanRequestCount(): number {
  return sent;
}

/** One request: resolves with the answer once its headers arrive (see the module comment). */
function send(
  target: Target,
  url: string,
  init: RequestInit & { body: string },
  options: LeanTransportOptions,
  ms: number,
): Promise<LeanResponse | Response> {
  const signal = init.signal ?? undefined;
  // Pushed one by one, not mapped: an array from TurboFan's inlined `map` has another map than
  // the builtin's, and the loops over it would deopt `send` once it is optimized.
  const pieces: Buffer[] = [];
  let length = 0;
  for (const piece of bodyPieces(init.body)) {
    const bytes = typeof piece === 'string' ? Buffer.from(piece, 'utf8') : piece;
    pieces.push(bytes);
    length += bytes.length;
  }
  return new Promise((resolve, reject) => {
    let settled = false;
    let response: IncomingMessage | undefined;
    /** Set when the request is abandoned (abort, a timeout): what every later read throws. */
    let failure: unknown;
    let redirect: AbortController | undefined;
    const cleanup = () => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
    };
    const fail = (reason: unknown) => {
      if (failure !== undefined) return;
      failure = reason;
      redirect?.abort(reason);
      if (!settled) {
        settled = true;
        cleanup();
        request?.destroy();
        reject(reason);
      } else if (response && !response.complete) {
        cleanup();
        response.destroy(reason as Error);
      }
    };
    const onAbort = () => fail(signal?.reason);
    const timer = setTimeout(() => fail(responseTimeoutError(options.provider, options.seconds)), ms);
    signal?.addEventListener('abort', onAbort, { once: true });

    const requestOptions: RequestOptions = {
      method: init.method ?? 'POST',
      hostname: target.hostname,
      port: target.port,
      path: target.path,
      headers: requestHeaders(init, target, length),
      agent: target.agent,
      timeout: UNDICI_TIMEOUT_MS,
    };
    let request: ClientRequest;
    try {
      request = target.request(requestOptions);
    } catch (error) {
      // A header value node:http refuses (fetch refuses it too, with a TypeError of its own).
      settled = true;
      cleanup();
      return reject(error);
    }
    sent++;
    request.on('error', (error) => {
      if (!settled) fail(new TypeError('fetch failed', { cause: socketCause(error) }));
    });
    request.on('timeout', () => {
      if (!settled) fail(new TypeError('fetch failed', { cause: undiciError('HeadersTimeoutError') }));
      else if (response && !response.complete)
        fail(new TypeError('terminated', { cause: undiciError('BodyTimeoutError') }));
    });
    request.on('response', (res) => {
      response = res;
      clearTimeout(timer);
      try {
        answer(res);
      } catch (error) {
        // A header value a Response refuses, say: as undici, the request failed.
        fail(new TypeError('fetch failed', { cause: error }));
      }
    });
    const answer = (res: IncomingMessage) => {
      const status = res.statusCode ?? 0;
      if (REDIRECTS.has(status)) {
        // As sendOnce: fetch asks again with the body as text, following the redirect.
        res.resume();
        redirect = new AbortController();
        // `window: null` sends it as it is (sendOnce tries the bytes again otherwise).
        const again = { ...init, body: splicedText(init.body), signal: redirect.signal, window: null };
        options.fallback(url, again).then(
          (answer) => {
            settled = true;
            cleanup();
            resolve(answer);
          },
          (error) => fail(failure ?? error),
        );
        return;
      }
      const body = decoded(res);
      if (status >= 200 && status <= 299) {
        settled = true;
        resolve({
          ok: true,
          status,
          statusText: res.statusMessage ?? '',
          url,
          headers: headerPairs(res.rawHeaders),
          body: chunksOf(body, () => failure, cleanup),
        });
        return;
      }
      collect(body).then(
        (bytes) => {
          if (settled) return;
          let built: Response;
          try {
            built = new Response(NULL_BODY.has(status) ? null : (bytes as Uint8Array<ArrayBuffer>), {
              status,
              statusText: res.statusMessage ?? '',
              headers: pairsOf(res.rawHeaders),
            });
          } catch (error) {
            return fail(new TypeError('fetch failed', { cause: error }));
          }
          settled = true;
          cleanup();
          resolve(built);
        },
        (error) => fail(failure ?? new TypeError('fetch failed', { cause: socketCause(error) })),
      );
    };
    for (const piece of pieces) request.write(piece);
    request.end();
  });
}

/** The headers undici sends for this request: the caller's, then its own where the caller set none. */
function requestHeaders(init: RequestInit, target: Target, length: number): Record<string, string> {
  const out: Record<string, string> = { host: target.host };
  const given = init.headers;
  if (given instanceof Headers || Array.isArray(given))
    for (const [name, value] of given as Iterable<[string, string]>) out[name.toLowerCase()] = value;
  else if (given)
    for (const name of Object.keys(given)) {
      const value = (given as Record<string, string | undefined>)[name];
      if (value != null) out[name.toLowerCase()] = String(value);
    }
  out['content-type'] ??= 'text/plain;charset=UTF-8';
  out.accept ??= '*/*';
  out['accept-language'] ??= '*';
  out['sec-fetch-mode'] = 'cors';
  out['user-agent'] ??= 'node';
  out['accept-encoding'] ??= target.https ? 'br, gzip, deflate' : 'gzip, deflate';
  out['content-length'] = String(length);
  return out;
}

/** The answer's body, decompressed when it says it is encoded (the codings undici undoes). */
function decoded(res: IncomingMessage): Readable {
  const coding = res.headers['content-encoding'];
  if (!coding || NULL_BODY.has(res.statusCode ?? 0)) return res;
  const codings = coding
    .toLowerCase()
    .split(',')
    .map((part) => part.trim())
    .filter(Boolean);
  if (codings.length === 0 || codings.some((part) => !DECODERS.has(part))) return res;
  return decodeWith(res, codings.reverse());
}

const DECODERS = new Set(['gzip', 'x-gzip', 'deflate', 'br']);

function decodeWith(res: IncomingMessage, codings: string[]): Readable {
  // Loaded on the first compressed answer only.
  const zlib = process.getBuiltinModule('node:zlib');
  const flush = { flush: zlib.constants.Z_SYNC_FLUSH, finishFlush: zlib.constants.Z_SYNC_FLUSH };
  let stream: Readable = res;
  for (const coding of codings) {
    const next =
      coding === 'br'
        ? zlib.createBrotliDecompress({
            flush: zlib.constants.BROTLI_OPERATION_FLUSH,
            finishFlush: zlib.constants.BROTLI_OPERATION_FLUSH,
          })
        : coding === 'deflate'
          ? zlib.createInflate(flush)
          : zlib.createGunzip(flush);
    const from = stream;
    from.on('error', (error) => next.destroy(error));
    stream = from.pipe(next);
  }
  return stream;
}

/**
 * The body's chunks; a failure while reading is undici's `terminated` (or the abandon reason).
 * Read from the stream itself (`read()` when its buffer holds data, its `readable` event when it
 * does not, its end or failure from `finished`), as Node's own iterator reads it but without that
 * iterator's async generator (≈ 6 promises a read): one promise a read, the one `next` answers.
 * The body is read only when asked (back-pressure as before). At the end, a failure or a
 * `return`, the request's timer and abort listener go (`cleanup`) and an unfinished body is
 * destroyed; a read waiting then answers done.
 */
function chunksOf(body: Readable, abandoned: () => unknown, cleanup: () => void): AsyncIterable<Uint8Array> {
  let closed = false;
  /** undefined while the body is open, null once it ended, its error once it failed. */
  let ended: Error | null | undefined;
  let watching: (() => void) | undefined;
  let wake: (() => void) | undefined;
  const woken = () => {
    const waiting = wake;
    wake = undefined;
    waiting?.();
  };
  const close = () => {
    if (closed) return;
    closed = true;
    cleanup();
    body.off('readable', woken);
    watching?.();
    if (!body.readableEnded) body.destroy();
    woken();
  };
  /** The read's answer now, or undefined when the body has nothing yet; throws the read's failure. */
  const attempt = (): IteratorResult<Uint8Array, undefined> | undefined => {
    if (closed) return CHUNKS_DONE;
    if (!watching) {
      body.on('readable', woken);
      watching = finished(body, { writable: false }, (error) => {
        ended = error ?? null;
        woken();
      });
    }
    const chunk = body.destroyed ? null : (body.read() as Uint8Array | null);
    if (chunk !== null) return { done: false, value: chunk };
    if (ended === null) {
      close();
      return CHUNKS_DONE;
    }
    if (ended === undefined) return undefined;
    close();
    throw abandoned() ?? new TypeError('terminated', { cause: socketCause(ended) });
  };
  const iterator: AsyncIterableIterator<Uint8Array> = {
    next: () => {
      try {
        const now = attempt();
        if (now) return Promise.resolve(now);
      } catch (error) {
        return Promise.reject(error);
      }
      return new Promise((resolve, reject) => {
        const retry = () => {
          try {
            const now = attempt();
            if (now) resolve(now);
            else wake = retry;
          } catch (error) {
            reject(error);
          }
        };
        wake = retry;
      });
    },
    return: () => {
      close();
      return Promise.resolve(CHUNKS_DONE);
    },
    [Symbol.asyncIterator]: () => iterator,
  };
  return iterator;
}
const CHUNKS_DONE: IteratorReturnResult<undefined> = Object.freeze({ done: true, value: undefined });

async function collect(body: Readable): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of body) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

/** undici's cause for a peer that closed the connection; other socket errors as they are. */
function socketCause(error: unknown): unknown {
  const e = error as { code?: unknown; message?: unknown };
  if (e?.code === 'ECONNRESET' && (e.message === 'socket hang up' || e.message === 'aborted'))
    return Object.assign(new Error('other side closed'), {
      name: 'SocketError',
      code: 'UND_ERR_SOCKET',
    });
  return error;
}

function undiciError(name: 'HeadersTimeoutError' | 'BodyTimeoutError'): Error {
  const headers = name === 'HeadersTimeoutError';
  return Object.assign(new Error(headers ? 'Headers Timeout Error' : 'Body Timeout Error'), {
    name,
    code: headers ? 'UND_ERR_HEADERS_TIMEOUT' : 'UND_ERR_BODY_TIMEOUT',
  });
}

/** Raw header lines as a `Headers` iterates them: sorted lower-case names, repeats joined by ", ". */
export function headerPairs(raw: string[]): [string, string][] {
  const joined = new Map<string, string>();
  const cookies: string[] = [];
  for (let i = 0; i + 1 < raw.length; i += 2) {
    const name = raw[i].toLowerCase();
    const value = raw[i + 1];
    if (name === 'set-cookie') cookies.push(value);
    else {
      const before = joined.get(name);
      joined.set(name, before === undefined ? value : `${before}, ${value}`);
    }
  }
  const out: [string, string][] = [...joined];
  for (const cookie of cookies) out.push(['set-cookie', cookie]);
  return out.sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
}

function pairsOf(raw: string[]): [string, string][] {
  const out: [string, string][] = [];
  for (let i = 0; i + 1 < raw.length; i += 2) out.push([raw[i], raw[i + 1]]);
  return out;
}
