/**
 * One request of the attach transport: a route of the session API (or a tool's HTTP binding) with
 * its path parameters, query and JSON body, bearer auth and a 30 s timeout; an error answer
 * becomes the SvcError the server meant (its code from the body, else from the status).
 * @module
 */
import { SvcError, type SvcErrorCode } from '../../errors';

/** `route` is `"<METHOD> <path template>"` (e.g. `GET /v1/sessions/:id`). */
export type HttpRequest = (
  route: string,
  params?: Record<string, string>,
  body?: unknown,
  query?: Record<string, unknown>,
) => Promise<unknown>;

export function createHttpRequest(options: {
  base: string;
  fetch: typeof fetch;
  auth: Record<string, string>;
}): HttpRequest {
  const { base, auth } = options;
  const doFetch = options.fetch;
  return async function request(
    route: string,
    params: Record<string, string> = {},
    body?: unknown,
    query?: Record<string, unknown>,
  ) {
    const [method, template] = route.split(' ');
    let path = template.replace(/:([a-z_]+)/g, (_, name: string) => encodeURIComponent(params[name] ?? ''));
    const search = new URLSearchParams();
    for (const [k, v] of Object.entries(query ?? {})) {
      if (v === undefined || v === null) continue;
      search.set(k, typeof v === 'object' ? JSON.stringify(v) : String(v));
    }
    if ([...search].length) path += `?${search}`;
    let response: Response;
    try {
      response = await doFetch(`${base}${path}`, {
        method,
        headers: { ...auth, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
        body: body === undefined ? undefined : JSON.stringify(body),
        signal: AbortSignal.timeout(30_000),
      });
    } catch (error) {
      throw new SvcError('unavailable', `cannot reach ${base}: ${(error as Error).message}`, {
        cause: error,
      });
    }
    const text = await response.text();
    let json: unknown;
    try {
      json = text ? JSON.parse(text) : undefined;
    } catch {
      json = undefined;
    }
    if (!response.ok) throw httpError(response.status, method, template, json, text);
    return json;
  };
}

const CODES = new Set<string>([
  'invalid_input',
  'config_error',
  'not_found',
  'unauthorized',
  'forbidden',
  'conflict',
  'unavailable',
  'rate_limited',
  'timeout',
  'cancelled',
  'internal',
]);

function httpError(status: number, method: string, path: string, json: unknown, text: string): SvcError {
  const error = (json as { error?: unknown } | undefined)?.error;
  const message =
    typeof error === 'string'
      ? error
      : typeof (error as { message?: unknown })?.message === 'string'
        ? (error as { message: string }).message
        : text.trim().slice(0, 200) || `HTTP ${status}`;
  const type = (error as { type?: string } | undefined)?.type;
  const code: SvcErrorCode =
    type && CODES.has(type)
      ? (type as SvcErrorCode)
      : status === 401
        ? 'unauthorized'
        : status === 403
          ? 'forbidden'
          : status === 404
            ? 'not_found'
            : status === 503
              ? 'unavailable'
              : status === 400
                ? 'invalid_input'
                : status === 409
                  ? 'conflict'
                  : 'internal';
  if (status === 404 && message === '404 Not Found')
    return new SvcError('unavailable', `the server has no route ${method} ${path} (older svc?)`, {
      status,
      details: { reason: 'tool_missing', route: `${method} ${path}` },
    });
  if (status === 401)
    return new SvcError('unauthorized', `${message}: pass --token or set SVC_HTTP_TOKEN`, { status });
  return new SvcError(code, message, { status });
}
