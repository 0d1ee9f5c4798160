/**
 * The page's one way to the server: every call carries the bearer header (never a cookie), the
 * base URL comes from the page's own location (so a reverse proxy may serve it under a prefix),
 * and every failure becomes an `ApiError` whose message a person can act on.
 * @module
 */

export type ApiErrorCode =
  | 'unauthorized'
  | 'not_found'
  | 'unreachable'
  | 'timeout'
  | 'unavailable'
  | 'invalid_input'
  | 'conflict'
  | 'server_error';

export class ApiError extends Error {
  constructor(
    readonly code: ApiErrorCode,
    message: string,
    readonly status = 0,
  ) {
    super(message);
    this.name = 'ApiError';
  }
}

export type Query = Record<string, string | number | boolean | undefined | null>;

export interface Api {
  /** Absolute base ending in `/` (e.g. `https://host/svc/`). */
  readonly base: string;
  get<T = unknown>(path: string, query?: Query): Promise<T>;
  post<T = unknown>(path: string, body?: unknown, query?: Query): Promise<T>;
  patch<T = unknown>(path: string, body?: unknown): Promise<T>;
  del<T = unknown>(path: string, query?: Query): Promise<T>;
  /** A URL under the base (for the event stream). */
  url(path: string, query?: Query): string;
  headers(): Record<string, string>;
  /** The bearer token, when there is one (the event stream's WebSocket carries it as a subprotocol). */
  token(): string | undefined;
  /** Report a 401 met outside `request` (the event stream): back to sign-in. */
  unauthorized(error: ApiError): void;
}

export interface ApiOptions {
  base: string;
  token(): string | undefined;
  /** Called on every 401, before the error is thrown (the app goes back to sign-in). */
  onUnauthorized?(error: ApiError): void;
  fetch?: typeof fetch;
  /** A call not answered in this long fails with `timeout` (default `API_TIMEOUT_MS`). */
  timeoutMs?: number;
}

/**
 * How long a call may go unanswered. A browser opens at most 6 connections to one server over
 * HTTP/1.1 and queues the rest without a word, so a call can wait behind other tabs' event streams.
 */
export const API_TIMEOUT_MS = 30_000;

/** The directory of the page: `/svc/index.html#/s/1` → `/svc/`. */
export function apiBase(href: string): string {
  const url = new URL(href);
  url.hash = '';
  url.search = '';
  url.pathname = url.pathname.replace(/[^/]*$/, '');
  return url.toString();
}

export function createApi(options: ApiOptions): Api {
  const doFetch = options.fetch ?? globalThis.fetch.bind(globalThis);
  const url = (path: string, query?: Query) => {
    const target = new URL(path.replace(/^\/+/, ''), options.base);
    for (const [key, value] of Object.entries(query ?? {})) {
      if (value !== undefined && value !== null && value !== '') target.searchParams.set(key, String(value));
    }
    return target.toString();
  };
  const headers = (): Record<string, string> => {
    const token = options.token();
    return token ? { authorization: `Bearer ${token}` } : {};
  };

  async function request<T>(method: string, path: string, body?: unknown, query?: Query): Promise<T> {
    const timeoutMs = options.timeoutMs ?? API_TIMEOUT_MS;
    let response: Response;
    try {
      response = await doFetch(url(path, query), {
        method,
        headers: {
          accept: 'application/json',
          ...headers(),
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        },
        body: body === undefined ? undefined : JSON.stringify(body),
        credentials: 'omit',
        cache: 'no-store',
        signal: AbortSignal.timeout(timeoutMs),
      });
    } catch (error) {
      if (isTimeout(error)) throw notAnswered(options.base, timeoutMs);
      throw unreachable(options.base);
    }
    const text = await response.text().catch(() => '');
    const json = parseJson(text);
    if (!response.ok) {
      const error = toApiError(response.status, json, text);
      if (error.code === 'unauthorized') options.onUnauthorized?.(error);
      throw error;
    }
    return json as T;
  }

  return {
    base: options.base,
    get: (path, query) => request('GET', path, undefined, query),
    post: (path, body, query) => request('POST', path, body ?? {}, query),
    patch: (path, body) => request('PATCH', path, body ?? {}),
    del: (path, query) => request('DELETE', path, undefined, query),
    url,
    headers,
    token: () => options.token(),
    unauthorized: (error) => options.onUnauthorized?.(error),
  };
}

/** A call or stream that got no answer at all (a call past its time is `notAnswered`). */
export function unreachable(base: string): ApiError {
  return new ApiError(
    'unreachable',
    `Cannot reach the svc server at ${base} (no answer). It may have stopped: start it again ` +
      '(svc service start http, or svc web) and this page reconnects.',
  );
}

/**
 * A call that got no answer in time: the server may be stuck or gone, or the browser never sent it,
 * queued behind the fetched event streams of other svc tabs (6 connections per server; streams
 * over a WebSocket do not count).
 */
export function notAnswered(base: string, timeoutMs: number): ApiError {
  return new ApiError(
    'timeout',
    `The svc server at ${base} did not answer in ${Math.round(timeoutMs / 1000)} s; too many svc tabs open? ` +
      'A browser opens at most 6 connections to one server, and where a WebSocket cannot reach it (a ' +
      'proxy that does not pass them on) every svc tab showing a session live holds one (a hidden tab ' +
      'lets its go after a few seconds unless its session is running): close some svc tabs and try ' +
      'again, or check that the server is running.',
  );
}

function isTimeout(error: unknown): boolean {
  return error instanceof DOMException && error.name === 'TimeoutError';
}

/** The server's error bodies: `{error:{message,type}}`, compat `{error, code}`, or plain text. */
export function toApiError(status: number, json: unknown, text: string): ApiError {
  const error = (json as { error?: unknown } | undefined)?.error;
  const message =
    typeof error === 'string'
      ? error
      : typeof (error as { message?: unknown } | undefined)?.message === 'string'
        ? (error as { message: string }).message
        : text.trim().slice(0, 300) || `HTTP ${status}`;
  if (status === 401) {
    return new ApiError(
      'unauthorized',
      `The server rejected the token (${message}). Sign in with the token the service was started with.`,
      status,
    );
  }
  if (status === 404) return new ApiError('not_found', message, status);
  if (status === 503) return new ApiError('unavailable', `The server is not ready: ${message}`, status);
  if (status === 409) return new ApiError('conflict', message, status);
  if (status >= 400 && status < 500) return new ApiError('invalid_input', message, status);
  return new ApiError('server_error', `The server failed (HTTP ${status}): ${message}`, status);
}

export function errorMessage(error: unknown): string {
  if (error instanceof Error) return error.message;
  return String(error);
}

function parseJson(text: string): unknown {
  if (!text) return undefined;
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
