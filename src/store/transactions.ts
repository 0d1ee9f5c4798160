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
  /**
   * Writes that need no atomicity together, only SQLite's one commit for them (an event and its
   * ledger row): `run` on SQLite; on PostgreSQL `fn` as it is, each statement its own transaction
   * (or the ambient one's), where a transaction of one statement cost BEGIN and COMMIT round trips.
   */
  together<T>(fn: () => Promise<T>): Promise<T>;
  /**
   * `run` for a body whose failure the caller lets end its own transaction (it never catches it
   * and commits): on PostgreSQL, inside a transaction, `fn` joins it with no savepoint (SAVEPOINT
   * and RELEASE protect nothing there and are two statements); `run` on SQLite, where a savepoint
   * costs no round trip.
   */
  join<T>(fn: () => Promise<T>): Promise<T>;
}

/** What a service sees of the App's store: its backend and its transactions. */
export interface StoreView {
  readonly kind: 'sqlite' | 'postgres';
  readonly transactions: StoreTransactions;
}

export function sqliteTransactions(db: () => Db): StoreTransactions {
  const run = <T>(fn: () => Promise<T>) => atomicallyAsync(db, fn);
  return { run, stepBatch: () => stepBatch(db), together: run, join: run };
}

export function postgresTransactions(sql: SqlClient): StoreTransactions {
  return {
    run: (fn) => sql.transaction(() => fn()),
    stepBatch: () => {},
    together: (fn) => fn(),
    join: (fn) => sql.joined(() => fn()),
  };
}
