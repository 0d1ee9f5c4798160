/**
 * Writers wait their turn. Several svc processes share one svc.db (two `svc run` in one
 * workspace, a server and a CLI): SQLite's busy timeout makes a blocked statement wait, and this
 * module covers what the timeout does not:
 *
 * - every transaction starts with `BEGIN IMMEDIATE` (better-sqlite3 defaults to a deferred
 *   `BEGIN`, whose read-then-write upgrade fails at once with SQLITE_BUSY when another process
 *   wrote in between, without waiting);
 * - a transaction whose start still fails with SQLITE_BUSY after the busy timeout is retried a
 *   few times with a short pause, as long as nothing of its body ran.
 * @module
 */
import type BetterSqlite3 from 'better-sqlite3';

type Db = BetterSqlite3.Database;
type Variant = 'deferred' | 'immediate' | 'exclusive';

/** Extra attempts at a transaction start that found the database busy after the busy timeout. */
export const BUSY_RETRIES = 4;
const PAUSE_MS = [25, 100, 250, 500];

export function isBusy(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' && /^SQLITE_(BUSY|LOCKED)/.test(code);
}

/** Block this thread for `ms` (the busy handler of better-sqlite3 blocks the same way). */
export function pauseSync(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

/** Run `fn`, retrying while it throws SQLITE_BUSY and `retryable()` says nothing was done yet. */
export function retryBusy<T>(fn: () => T, retryable: () => boolean = () => true): T {
  for (let attempt = 0; ; attempt++) {
    try {
      return fn();
    } catch (error) {
      if (attempt >= BUSY_RETRIES || !isBusy(error) || !retryable()) throw error;
      pauseSync(PAUSE_MS[Math.min(attempt, PAUSE_MS.length - 1)]);
    }
  }
}

/**
 * Make `db.transaction(fn)` start with BEGIN IMMEDIATE and retry a busy start. Nested calls stay
 * savepoints (better-sqlite3 decides that from `db.inTransaction`), and are never retried.
 */
export function immediateTransactions(db: Db): void {
  const original = db.transaction.bind(db);
  db.transaction = ((fn: (...args: unknown[]) => unknown) => {
    let entered = false;
    const tx = original(function (this: unknown, ...args: unknown[]) {
      entered = true;
      return fn.apply(this, args);
    });
    const variant =
      (name: Variant) =>
      (...args: unknown[]) => {
        if (db.inTransaction) return tx[name](...args);
        return retryBusy(
          () => {
            entered = false;
            return tx[name](...args);
          },
          () => !entered,
        );
      };
    const wrapped = variant('immediate');
    return Object.assign(wrapped, {
      default: wrapped,
      deferred: variant('deferred'),
      immediate: wrapped,
      exclusive: variant('exclusive'),
    });
  }) as Db['transaction'];
}
