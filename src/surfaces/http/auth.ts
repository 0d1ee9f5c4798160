/**
 * Bearer authentication (spec, Authentication → HTTP server authentication):
 * token configured + bearer missing or wrong → 401; no token and AllowNoAuth false → 401
 * `authentication required`; no token and AllowNoAuth true → pass. Constant-time comparison.
 * @module
 */

import { hash, timingSafeEqual } from 'node:crypto';
import type { Context, MiddlewareHandler } from 'hono';
import { SvcError } from '../../errors';
import { isLoopbackHostname } from '../../util/loopback';
import { type ErrorStyle, errorResponse } from './errors';

export interface AuthOptions {
  /** Resolved at request time so a reload can rotate it. */
  token: () => string | undefined;
  allowNoAuth: () => boolean;
  /** Paths that need no bearer (only /healthz). */
  publicPaths?: string[];
  styleFor?: (path: string) => ErrorStyle;
  /** How the operator sets this server's token, for refusals (default the HTTP service's). */
  tokenHint?: string;
}

/** The HTTP service's way to set its token; the MCP service passes its own. */
export const HTTP_TOKEN_HINT = '--token or SVC_HTTP_TOKEN';

export function bearerAuth(options: AuthOptions): MiddlewareHandler {
  const open = new Set(options.publicPaths ?? ['/healthz']);
  return async function bearerAuth(c, next) {
    if (open.has(c.req.path)) return next();
    const token = options.token();
    const refusal = bearerRefusal(c.req.header('authorization'), token, options.allowNoAuth);
    if (refusal !== undefined) return refused(c, refusal, options.styleFor?.(c.req.path) ?? 'canonical');
    const fromPage = token ? undefined : browserRefusal(c.req.raw.headers, options.tokenHint);
    return fromPage === undefined
      ? next()
      : refusedFromBrowser(c, fromPage, options.styleFor?.(c.req.path) ?? 'canonical');
  };
}

/**
 * Why a request with this `authorization` header is refused, or undefined when it is admitted:
 * the middleware's decision, synchronous, for the hot compat route's own gate (index.ts) too.
 * An empty token (e.g. SVC_HTTP_TOKEN="") is no token: it never matches an empty bearer.
 */
export function bearerRefusal(
  header: string | undefined,
  configured: string | undefined,
  allowNoAuth: () => boolean,
): string | undefined {
  const token = configured || undefined;
  if (!token) return allowNoAuth() ? undefined : 'authentication required';
  const match = /^Bearer\s+(.+)$/i.exec((header ?? '').trim());
  if (!match) return 'authentication required: missing bearer token';
  if (!timingSafeEqual(sha256(match[1].trim()), tokenHash(token)))
    return 'authentication required: invalid bearer token';
  return undefined;
}

/** A loopback address to bind (no `*.localhost`: see isLoopbackHostname). */
export const isLoopbackHost = (host: string): boolean => isLoopbackHostname(host);

/** The name of a `Host` header value (`[::1]:7420` → `::1`, `localhost:7420` → `localhost`). */
function hostName(host: string): string {
  const bracket = /^\[([^\]]*)\](?::\d*)?$/.exec(host);
  if (bracket) return bracket[1];
  const colon = host.lastIndexOf(':');
  return colon > 0 && host.indexOf(':') === colon ? host.slice(0, colon) : host;
}

/**
 * Why a request to a server with no token (`--auth none`, loopback only) is refused as coming from
 * a web page, or undefined. No token means any local process may drive the agent, and so could any
 * web page the user opens, unless its requests are told apart: a page's `fetch` carries its
 * `Origin` (a cross-origin POST of `text/plain` needs no CORS preflight) and `Sec-Fetch-Site`, and a
 * page that rebinds its own DNS name to 127.0.0.1 (DNS rebinding) sends its name as `Host`. So the
 * `Host` must be a loopback name, and a browser's request must come from a page this server served.
 * Clients that are not browsers (curl, SDKs, the TUI) send neither header and pass.
 */
export function browserRefusal(headers: Headers, tokenHint = HTTP_TOKEN_HINT): string | undefined {
  const host = headers.get('host');
  const fix = `set a token (${tokenHint}) to serve it`;
  const misaddressed = hostRefusal(headers, tokenHint);
  if (misaddressed !== undefined) return misaddressed;
  const origin = headers.get('origin');
  if (origin !== null && !sameOrigin(origin, host)) {
    return `a request from the web page at ${JSON.stringify(origin)} is refused: with no token (--auth none) only this server's own pages may call it; ${fix}`;
  }
  if (origin === null && headers.get('sec-fetch-site') === 'cross-site')
    return `a cross-site request from a web page is refused: with no token (--auth none) only this server's own pages may call it; ${fix}`;
  return undefined;
}

/**
 * Why a request to a server with no token is refused for its `Host`, or undefined: a name that
 * is not loopback is a page that rebound its own DNS name to 127.0.0.1 (DNS rebinding).
 */
export function hostRefusal(headers: Headers, tokenHint = HTTP_TOKEN_HINT): string | undefined {
  const host = headers.get('host');
  // `*.localhost` too: browsers resolve those names to loopback themselves, never through DNS.
  const name = host ? hostName(host) : undefined;
  if (name === undefined || isLoopbackHostname(name, { subdomains: true })) return undefined;
  return `Host ${JSON.stringify(host)} is not a loopback name: with no token (--auth none) svc answers only requests addressed to localhost, 127.0.0.1 or [::1], a guard against DNS rebinding; set a token (${tokenHint}) to serve it`;
}

/**
 * The refusal of a request to a route that takes no bearer (`/healthz`, the web UI's files), or
 * undefined: with no token they too answer only a loopback `Host`, so a DNS-rebinding page can
 * neither spot svc (`/healthz` names its version and store) nor load its UI under the page's own
 * name. With a token they answer any `Host` (load balancers probe `/healthz` by address).
 */
export function openRouteRefusal(
  token: () => string | undefined,
  styleFor?: (path: string) => ErrorStyle,
  tokenHint?: string,
): (c: Context) => Response | undefined {
  return (c) => {
    const refusal = token() ? undefined : hostRefusal(c.req.raw.headers, tokenHint);
    return refusal === undefined
      ? undefined
      : refusedFromBrowser(c, refusal, styleFor?.(c.req.path) ?? 'canonical');
  };
}

function sameOrigin(origin: string, host: string | null): boolean {
  if (!host) return false;
  try {
    return new URL(origin).host === new URL(`http://${host}`).host;
  } catch {
    return false;
  }
}

/** The 403 of a request refused as a web page's (`browserRefusal`). */
export function refusedFromBrowser(c: Context, message: string, style: ErrorStyle): Response {
  return errorResponse(c, new SvcError('forbidden', message), { style });
}

/** The 401 of a refused request, in its route's error style (looked up only for a refusal). */
export function refused(c: Context, message: string, style: ErrorStyle): Response {
  const response = errorResponse(c, new SvcError('unauthorized', message), { style });
  response.headers.set('www-authenticate', 'Bearer realm="svc"');
  return response;
}

/**
 * The configured token's hash, hashed again only when the token changes (a reload rotates it):
 * one hash a request instead of two (issue 17).
 */
let hashed: { token: string; hash: Buffer } | undefined;
function tokenHash(token: string): Buffer {
  if (hashed?.token !== token) hashed = { token, hash: sha256(token) };
  return hashed.hash;
}

/** One call, no Hash object (`crypto.hash`, Node 20.12+): the bearer's hash on every request. */
function sha256(text: string): Buffer {
  return hash('sha256', text, 'buffer');
}

/** Hash both sides first so the comparison takes the same time whatever the lengths. */
export function safeEqual(a: string, b: string): boolean {
  return timingSafeEqual(sha256(a), sha256(b));
}
