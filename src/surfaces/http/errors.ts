/**
 * The one place HTTP turns an error into a response. Body shapes:
 * canonical `{error:{message,type}}`; flat `{error, code}` (compat routes, spec Errors → Compat
 * surface); text (spec readout routes whose errors are plain text).
 * @module
 */
import type { Context } from 'hono';
import type { ContentfulStatusCode } from 'hono/utils/http-status';
import type { App } from '../../app';
import { SvcError, toSvcError } from '../../errors';

export type ErrorStyle = 'canonical' | 'flat' | 'text';

export function errorResponse(
  c: Context,
  error: unknown,
  options: { style?: ErrorStyle; app?: App; statusFor?: Partial<Record<string, number>> } = {},
): Response {
  const e = toSvcError(error);
  if (e.code === 'internal' && clientAborted(e.cause ?? e)) {
    // The client closed the connection while its body was being read: nothing failed on this side,
    // and nobody reads the answer (it was logged as an error with a stack, one per dropped upload).
    options.app?.log.debug('http request abandoned by the client', { path: c.req.path });
  } else if (e.code === 'internal') {
    options.app?.log.error('http request failed', { path: c.req.path, error: e.cause ?? e });
  }
  const status = (options.statusFor?.[e.code] ?? e.status) as ContentfulStatusCode;
  const message = options.app ? options.app.redactor.string(e.message) : e.message;
  const headers: Record<string, string> = {};
  if (e.retryAfterMs !== undefined) headers['retry-after'] = String(Math.ceil(e.retryAfterMs / 1000));
  switch (options.style ?? 'canonical') {
    case 'flat':
      return c.json({ error: message, code: status }, status, headers);
    case 'text':
      return c.text(message, status, headers);
    default:
      return c.json({ error: { message, type: e.code } }, status, headers);
  }
}

/** Node's error for a request whose connection closed before its body arrived whole. */
function clientAborted(error: unknown): boolean {
  const { code, message } = (error ?? {}) as { code?: unknown; message?: unknown };
  return code === 'ECONNRESET' && message === 'aborted';
}

export function httpError(
  status: number,
  message: string,
  code: SvcError['code'] = 'invalid_input',
): SvcError {
  return new SvcError(code, message, { status });
}
