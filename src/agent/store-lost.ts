/**
 * Whether a PostgreSQL failure is the store gone (`storeLost`), which a caller may wait out and send
 * again, or a statement it refused: ./finish-retry.ts (the run's finish) and ./end-step.ts (a run's
 * last step end sent alone before a finish that cannot carry it).
 * @module
 */
import { SvcError } from '../errors';

/**
 * The store went (its connection lost or unreachable, every pooled connection busy, the server
 * shutting down: SQLSTATE classes 08 and 57P), not a statement it refused (a PostgreSQL error is
 * `unavailable` too, reason `error`: src/store/postgres/errors.ts). A statement that was not
 * refused can be sent again once the store is back, as it was.
 */
export function storeLost(error: unknown): boolean {
  if (!SvcError.is(error) || error.code !== 'unavailable') return false;
  const { reason, code } = (error.details ?? {}) as { reason?: unknown; code?: unknown };
  return reason !== 'error' || /^(08|57P)/.test(String(code ?? ''));
}
