/**
 * One transaction over several repositories, whichever backend holds them (issue 18). A service
 * that must write rows of several repositories together (a step's message, ledger and event rows)
 * asks the store for a transaction instead of a SQLite handle: on SQLite it is `atomicallyAsync`
 * (one BEGIN IMMEDIATE per connection, joining an open batch), on PostgreSQL the client's ambient
 * transaction (every repository built on that client runs its statements on the transaction's
 * connection, a nested call is a savepoint).
 * @module
 */
import { atomicallyAsync, type Db, stepBatch } from './db';
import type { SqlClient } from './postgres/client';

export interface StoreTransactions {
  /** `fn`'s reads and writes commit together, or none of them when it throws. */
  run<T>(fn: () => Promise<T>): Promise<T>;
  /**
   * The agent's step batch: on SQLite the writes of this busy stretch share one commit (`stepBatch`
   * in ./db.ts); a no-op on PostgreSQL, where a step's writes are grouped by `run`.
   */
  stepBatch(): void;
}

/** What a service sees of the App's store: its backend and its transactions. */
export interface StoreView {
  readonly kind: 'sqlite' | 'postgres';
  readonly transactions: StoreTransactions;
}

export function sqliteTransactions(db: () => Db): StoreTransactions {
  return { run: (fn) => atomicallyAsync(db, fn), stepBatch: () => stepBatch(db) };
}

export function postgresTransactions(sql: SqlClient): StoreTransactions {
  return { run: (fn) => sql.transaction(() => fn()), stepBatch: () => {} };
}
