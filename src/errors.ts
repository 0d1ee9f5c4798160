/**
 * One error type for every expected failure. Each surface maps it in one place:
 * HTTP status + body, MCP tool error, CLI stderr line + exit code, agent tool-result text.
 * @module
 */

export type SvcErrorCode =
  | 'invalid_input'
  | 'config_error'
  | 'not_found'
  | 'unauthorized'
  | 'forbidden'
  | 'conflict'
  | 'unavailable'
  | 'rate_limited'
  | 'timeout'
  | 'cancelled'
  | 'internal';

const STATUS: Record<SvcErrorCode, number> = {
  invalid_input: 400,
  config_error: 400,
  not_found: 404,
  unauthorized: 401,
  forbidden: 403,
  conflict: 409,
  unavailable: 503,
  rate_limited: 429,
  timeout: 504,
  cancelled: 499,
  internal: 500,
};

/**
 * What failed, as every surface shows it: `summary` is one line naming what failed with the
 * provider and the model, `next` the step that fixes it (a command or a config key), `details`
 * the rest (one key or flag away). Built by the classifier in src/agent/failure.ts.
 */
export interface FailureReport {
  code: string;
  summary: string;
  next: string;
  details: Record<string, unknown>;
}

const BRAND = Symbol.for('svc.error');

export interface SvcErrorOptions {
  status?: number;
  details?: Record<string, unknown>;
  cause?: unknown;
  retryable?: boolean;
  retryAfterMs?: number;
}

export class SvcError extends Error {
  readonly [BRAND] = true;
  readonly code: SvcErrorCode;
  readonly status: number;
  readonly details?: Record<string, unknown>;
  readonly retryable: boolean;
  readonly retryAfterMs?: number;

  constructor(code: SvcErrorCode, message: string, options: SvcErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'SvcError';
    this.code = code;
    this.status = options.status ?? STATUS[code];
    this.details = options.details;
    this.retryable = options.retryable ?? (code === 'rate_limited' || code === 'unavailable');
    this.retryAfterMs = options.retryAfterMs;
  }

  /** Works across two loaded copies of this module (bundle + tests). */
  static is(value: unknown): value is SvcError {
    return typeof value === 'object' && value !== null && (value as Record<symbol, unknown>)[BRAND] === true;
  }

  /** CLI exit code: 2 for usage/config problems, 1 for everything else. */
  get exitCode(): number {
    return this.code === 'invalid_input' || this.code === 'config_error' ? 2 : 1;
  }
}

/** Anything that is not an SvcError is a bug: it becomes `internal`, the original kept as cause. */
export function toSvcError(error: unknown): SvcError {
  if (SvcError.is(error)) return error;
  if (error instanceof Error && error.name === 'AbortError') {
    return new SvcError('cancelled', 'the operation was cancelled', { cause: error });
  }
  // A write that waited out the busy timeout (openDb maps errors at open; this is a later write).
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code === 'string' && /^SQLITE_(BUSY|LOCKED)/.test(code)) {
    return new SvcError(
      'unavailable',
      'the database (svc.db in the data dir) is locked by another process; try again when it finishes',
      { cause: error },
    );
  }
  // A database that opened but fails later (a damaged page, a file made read-only meanwhile).
  if (typeof code === 'string' && /^SQLITE_(CORRUPT|NOTADB)/.test(code)) {
    return new SvcError(
      'unavailable',
      'the database (svc.db in the data dir) is damaged; it was left untouched: run svc doctor, then move it aside or restore a backup',
      { cause: error },
    );
  }
  if (typeof code === 'string' && /^SQLITE_READONLY/.test(code)) {
    return new SvcError(
      'unavailable',
      'the database (svc.db in the data dir) is read-only; make it and its directory writable, or pass --data-dir',
      { cause: error },
    );
  }
  // A name the file system cannot hold that no path check saw (a link's target, a made-up name).
  if (code === 'ENAMETOOLONG') {
    return new SvcError(
      'invalid_input',
      'a file name is over 255 bytes or a path over the system limit (ENAMETOOLONG); use shorter names',
      { cause: error },
    );
  }
  const message = error instanceof Error ? error.message : String(error);
  return new SvcError('internal', `internal error: ${message}`, { cause: error });
}

/**
 * The abort reason of a durable run this node hands over to a live node at a clean stop (issue 19):
 * what the run was doing is left unfinished, as if the node had died, so the adopting node goes on
 * from it (a pending permission request stays pending; a call in flight gets no result here).
 */
export function handOverReason(): SvcError {
  return new SvcError('unavailable', 'svc shut down: the run is handed over to a live node', {
    details: { handed_over: true },
  });
}

export function isHandOver(reason: unknown): boolean {
  return SvcError.is(reason) && reason.details?.handed_over === true;
}
