/**
 * One transaction over several repositories, whichever backend holds them (issue 18). A service
 * that must write rows of several repositories together (a step's message, ledger and event rows)
 * asks the store for a transaction instead of a SQLite handle: on SQLite it is `atomicallyAsync`
 * (one BEGIN IMMEDIATE per connection, joining an open batch), on PostgreSQL the client's ambient
 * transaction (every repository built on that client runs its statements on the transaction's
 * connection, a nested call is a savepoint).
 * @module
 */
import { atomicallyAsync, type Db } from './db';
import type { SqlClient } from './postgres/client';

export interface StoreTransactions {
  /** `fn`'s reads and writes commit together, or none of them when it throws. */
  run<T>(fn: () => Promise<T>): Promise<T>;
}

export function sqliteTransactions(db: () => Db): StoreTransactions {
  return { run: (fn) => atomicallyAsync(db, fn) };
}

export function postgresTransactions(sql: SqlClient): StoreTransactions {
  return { run: (fn) => sql.transaction(() => fn()) };
}
