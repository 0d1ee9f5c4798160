/**
 * Bearer authentication (spec, Authentication → HTTP server authentication):
 * token configured + bearer missing or wrong → 401; no token and AllowNoAuth false → 401
 * `authentication required`; no token and AllowNoAuth true → pass. Constant-time comparison.
 * @module
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import type { MiddlewareHandler } from 'hono';
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
    // An empty token (e.g. SVC_HTTP_TOKEN="") is no token: it never matches an empty bearer.
    const token = options.token() || undefined;
    // The error style is looked up only for a refusal: an admitted request (every compat one) needs none.
    const deny = (message: string) => {
      const style = options.styleFor?.(c.req.path) ?? 'canonical';
      const response = errorResponse(c, new SvcError('unauthorized', message), { style });
      response.headers.set('www-authenticate', 'Bearer realm="svc"');
      return response;
    };
    if (!token) {
      if (options.allowNoAuth()) return next();
      return deny('authentication required');
    }
    const header = c.req.header('authorization') ?? '';
    const match = /^Bearer\s+(.+)$/i.exec(header.trim());
    if (!match) return deny('authentication required: missing bearer token');
    if (!timingSafeEqual(sha256(match[1].trim()), tokenHash(token)))
      return deny('authentication required: invalid bearer token');
    return next();
  };
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

function sha256(text: string): Buffer {
  return createHash('sha256').update(text).digest();
}

/** Hash both sides first so the comparison takes the same time whatever the lengths. */
export function safeEqual(a: string, b: string): boolean {
  return timingSafeEqual(sha256(a), sha256(b));
}
