/**
 * The transaction statements of the async transactions and batches (./db.ts), prepared once per
 * handle (./statement-cache.ts, the repositories' cache) instead of parsed on every `exec`: a compat request runs about five of them (issue 17
 * item 3). Savepoints have one fixed name: async bodies run one at a time per connection and a
 * body called from inside another joins it, so at most one `svc_async` savepoint is open, and
 * SQLite resolves a repeated name to the innermost one anyway. Each run drops the handle's
 * transaction memos the way `exec` of the same text does (./transaction-memo.ts).
 * @module
 */
import type BetterSqlite3 from 'better-sqlite3';
import { preparedOn } from './statement-cache';
import { clearTransactionMemos, flushHeld, type HeldEvent } from './transaction-memo';

type Db = BetterSqlite3.Database;

export const TRANSACTION_STATEMENTS = {
  begin: 'BEGIN IMMEDIATE',
  commit: 'COMMIT',
  rollback: 'ROLLBACK',
  savepoint: 'SAVEPOINT svc_async',
  release: 'RELEASE svc_async',
  rollbackTo: 'ROLLBACK TO svc_async',
} as const;
type Kind = keyof typeof TRANSACTION_STATEMENTS;
const HELD_EVENTS: Record<Kind, HeldEvent> = {
  begin: 'drop',
  commit: 'write',
  rollback: 'drop',
  savepoint: 'savepoint',
  release: 'release',
  rollbackTo: 'rollbackTo',
};

/** Runs one transaction statement on `db` (prepared at its first use on the handle). */
export function runTransactionStatement(db: Db, kind: Kind): void {
  const statement = preparedOn(db, TRANSACTION_STATEMENTS[kind]);
  // SAVEPOINT and RELEASE neither start nor end what the memos hold (as with `exec`).
  const ends = kind !== 'savepoint' && kind !== 'release';
  // Held rows (./held-rows.ts) told of it first.
  flushHeld(db, HELD_EVENTS[kind]);
  if (ends) clearTransactionMemos(db);
  try {
    statement.run();
  } finally {
    if (ends) clearTransactionMemos(db);
  }
}
