/**
 * Pieces every `svc auth <platform>` flow shares: endpoint settings (defaults overridable under
 * `[auth.<platform>]`, so tests run each flow against a fake server on 127.0.0.1), PKCE, a loopback
 * callback server, JSON/form requests with clear errors, and how a flow talks to the operator.
 * @module
 */
import { spawn } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { SvcError } from '../../errors';
import type { Env } from '../context';

/** How a flow reaches the human: lines to print, and a browser to open when there is one. */
export interface AuthIo {
  print(line: string): void;
  /** Open a URL in the user's browser (best effort; the URL is printed too). */
  openUrl?(url: string): void;
  signal?: AbortSignal;
}

export function settings<T extends Record<string, string>>(
  defaults: T,
  overrides: Record<string, string> | undefined,
): T {
  return { ...defaults, ...(overrides ?? {}) } as T;
}

export function pkce(): { verifier: string; challenge: string; state: string } {
  const verifier = randomBytes(32).toString('base64url');
  return {
    verifier,
    challenge: createHash('sha256').update(verifier).digest('base64url'),
    state: randomBytes(16).toString('hex'),
  };
}

export interface Callback {
  /** The redirect URI to register/send (`http://localhost:<port><path>`). */
  redirectUri: string;
  /** Resolves with the callback's query parameters. */
  result: Promise<URLSearchParams>;
  close(): void;
}

/**
 * A one-shot HTTP server on 127.0.0.1 that waits for the browser redirect. `port` 0 picks a free
 * port (the redirect URI carries it); some platforms require a fixed registered port.
 */
export async function startCallback(options: {
  port: number;
  path: string;
  host?: string;
  timeoutMs: number;
  signal?: AbortSignal;
  expectState?: string;
}): Promise<Callback> {
  let settle!: { resolve: (p: URLSearchParams) => void; reject: (e: unknown) => void };
  const result = new Promise<URLSearchParams>((resolve, reject) => {
    settle = { resolve, reject };
  });
  result.catch(() => {});
  const server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://127.0.0.1');
    if (url.pathname !== options.path) {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('not found');
      return;
    }
    const params = url.searchParams;
    if (params.get('error')) {
      res
        .writeHead(400, { 'content-type': 'text/plain' })
        .end(`Sign-in failed: ${params.get('error')}. Return to the terminal.`);
      settle.reject(
        new SvcError(
          'unauthorized',
          `authorization was refused: ${params.get('error_description') ?? params.get('error')}`,
        ),
      );
      return;
    }
    if (options.expectState !== undefined && params.get('state') !== options.expectState) {
      res
        .writeHead(400, { 'content-type': 'text/plain' })
        .end('State mismatch. Start the sign-in again from the terminal.');
      settle.reject(
        new SvcError('unauthorized', 'authorization callback had the wrong state; run the command again'),
      );
      return;
    }
    if (!params.get('code')) {
      res.writeHead(400, { 'content-type': 'text/plain' }).end('Missing authorization code.');
      return;
    }
    res
      .writeHead(200, { 'content-type': 'text/html; charset=utf-8' })
      .end(
        '<!doctype html><title>svc</title><p>Signed in. You can close this tab and return to the terminal.</p>',
      );
    settle.resolve(params);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', (error: NodeJS.ErrnoException) =>
      reject(
        new SvcError(
          'unavailable',
          `cannot listen on 127.0.0.1:${options.port} for the sign-in callback (${error.code ?? error.message}); free the port and retry`,
        ),
      ),
    );
    server.listen(options.port, '127.0.0.1', resolve);
  });
  const port = (server.address() as AddressInfo).port;
  // A browser may resolve `localhost` to ::1 first: answer there too when IPv6 is available.
  const server6 = createServer((req, res) => server.emit('request', req, res));
  server6.on('error', () => {});
  if ((options.host ?? 'localhost') === 'localhost') server6.listen(port, '::1');
  const timer = setTimeout(
    () =>
      settle.reject(new SvcError('timeout', 'no sign-in callback arrived in time; run the command again')),
    options.timeoutMs,
  );
  const onAbort = () => settle.reject(new SvcError('cancelled', 'sign-in cancelled'));
  options.signal?.addEventListener('abort', onAbort, { once: true });
  const close = () => {
    clearTimeout(timer);
    options.signal?.removeEventListener('abort', onAbort);
    for (const s of [server, server6]) {
      s.closeAllConnections?.();
      if (s.listening) s.close();
    }
  };
  result.then(close, close);
  return { redirectUri: `http://${options.host ?? 'localhost'}:${port}${options.path}`, result, close };
}

export async function requestJson(
  fetchFn: typeof fetch,
  what: string,
  url: string,
  init: {
    method?: string;
    json?: unknown;
    form?: Record<string, string>;
    headers?: Record<string, string>;
    signal?: AbortSignal;
  },
): Promise<{ status: number; body: Record<string, unknown> }> {
  const headers: Record<string, string> = {
    accept: 'application/json',
    'user-agent': 'svc',
    ...init.headers,
  };
  let body: string | undefined;
  if (init.json !== undefined) {
    headers['content-type'] = 'application/json';
    body = JSON.stringify(init.json);
  } else if (init.form) {
    headers['content-type'] = 'application/x-www-form-urlencoded';
    body = new URLSearchParams(init.form).toString();
  }
  const timeout = AbortSignal.timeout(30_000);
  let response: Response;
  try {
    response = await fetchFn(url, {
      method: init.method ?? (body ? 'POST' : 'GET'),
      headers,
      body,
      signal: init.signal ? AbortSignal.any([init.signal, timeout]) : timeout,
    });
  } catch (error) {
    if (init.signal?.aborted) throw new SvcError('cancelled', `${what}: cancelled`);
    throw new SvcError('unavailable', `${what}: ${url} unreachable (${(error as Error).message})`);
  }
  const text = await response.text();
  let parsed: Record<string, unknown> = {};
  try {
    const value = text ? JSON.parse(text) : {};
    parsed = typeof value === 'object' && value !== null ? (value as Record<string, unknown>) : {};
  } catch {
    // Some endpoints answer form-encoded bodies (GitHub without Accept) or plain text errors.
    parsed = Object.fromEntries(new URLSearchParams(text));
  }
  return { status: response.status, body: parsed };
}

/** Device-flow polling per RFC 8628: wait the interval, back off on slow_down, stop at expiry. */
export async function pollDevice<T>(options: {
  intervalMs: number;
  expiresInMs: number;
  signal?: AbortSignal;
  poll: () => Promise<{ done: T } | { pending: true; slowDown?: boolean }>;
}): Promise<T> {
  let interval = options.intervalMs;
  const deadline = Date.now() + options.expiresInMs;
  while (Date.now() < deadline) {
    await wait(interval, options.signal);
    const result = await options.poll();
    if ('done' in result) return result.done;
    if (result.slowDown) interval += 5_000;
  }
  throw new SvcError('timeout', 'the device code expired before it was approved; run the command again');
}

function wait(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(new SvcError('cancelled', 'sign-in cancelled'));
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener(
      'abort',
      () => {
        clearTimeout(timer);
        reject(new SvcError('cancelled', 'sign-in cancelled'));
      },
      { once: true },
    );
  });
}

/** Best-effort browser launch for an interactive terminal; the URL is always printed as well. */
export function browserOpener(env: Env, interactive: boolean): ((url: string) => void) | undefined {
  if (!interactive || env.SVC_NO_BROWSER === '1' || env.CI) return undefined;
  const command =
    process.platform === 'darwin' ? 'open' : process.platform === 'win32' ? 'explorer' : 'xdg-open';
  return (url) => {
    try {
      const child = spawn(command, [url], { stdio: 'ignore', detached: true });
      child.on('error', () => {});
      child.unref();
    } catch {
      // No browser: the printed URL is enough.
    }
  };
}

export function jwtClaims(token: string | undefined): Record<string, unknown> {
  const part = token?.split('.')[1];
  if (!part) return {};
  try {
    return JSON.parse(Buffer.from(part, 'base64url').toString('utf8')) as Record<string, unknown>;
  } catch {
    return {};
  }
}

export function failure(what: string, status: number, body: Record<string, unknown>): SvcError {
  const reason =
    (typeof body.error_description === 'string' && body.error_description) ||
    (typeof body.error === 'string' && body.error) ||
    (typeof body.message === 'string' && body.message) ||
    `HTTP ${status}`;
  return new SvcError(
    status === 401 || status === 403 || status === 400 ? 'unauthorized' : 'unavailable',
    `${what}: ${reason}`,
  );
}
