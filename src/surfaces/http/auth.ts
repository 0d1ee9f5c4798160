/**
 * Bearer authentication (spec, Authentication → HTTP server authentication):
 * token configured + bearer missing or wrong → 401; no token and AllowNoAuth false → 401
 * `authentication required`; no token and AllowNoAuth true → pass. Constant-time comparison.
 * @module
 */
import { hash, timingSafeEqual } from 'node:crypto';
import type { Context, MiddlewareHandler } from 'hono';
import { SvcError } from '../../errors';
import { type ErrorStyle, errorResponse } from './errors';

export interface AuthOptions {
  /** Resolved at request time so a reload can rotate it. */
  token: () => string | undefined;
  allowNoAuth: () => boolean;
  /** Paths that need no bearer (only /healthz). */
  publicPaths?: string[];
  styleFor?: (path: string) => ErrorStyle;
}

export function bearerAuth(options: AuthOptions): MiddlewareHandler {
  const open = new Set(options.publicPaths ?? ['/healthz']);
  return async function bearerAuth(c, next) {
    if (open.has(c.req.path)) return next();
    const refusal = bearerRefusal(c.req.header('authorization'), options.token(), options.allowNoAuth);
    return refusal === undefined
      ? next()
      : refused(c, refusal, options.styleFor?.(c.req.path) ?? 'canonical');
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
