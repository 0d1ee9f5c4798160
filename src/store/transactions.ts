/**
 * One transaction over several repositories, whichever backend holds them (issue 18). A service
 * that must write rows of several repositories together (a step's message, ledger and event rows)
 * asks the store for a transaction instead of a SQLite handle: on SQLite it is `atomicallyAsync`
 * (one BEGIN IMMEDIATE per connection, joining an open batch), on PostgreSQL the client's ambient
 * transaction (every repository built on that client runs its statements on the transaction's
 * connection, a nested call is a savepoint).
 * @module
 */
import { beforeCommit, yieldBatch } from './batch-yield';
import { afterBody, atomicallyAsync, atomicallyWith, type Db, inBatch, stepBatch, type TxToken } from './db';
import type { SqlClient } from './postgres/client';

/**
 * An open transaction body's token (SQLite, `runWith`): given to a nested `run`, `together`, `join`
 * or `stepBatch`, that call joins the body while it is open. Undefined on PostgreSQL, whose
 * client finds its transaction itself.
 */
export type Tx = TxToken;

/**
 * `within` in the methods below: the token of the body the call is made in (`runWith`,
 * `togetherWith`), which it joins while that body is open; without it (or once the body ended)
 * the call finds an open body through the async scope, as before.
 */
export interface StoreTransactions {
  /** `fn`'s reads and writes commit together, or none of them when it throws. */
  run<T>(fn: () => Promise<T>, within?: Tx): Promise<T>;
  /**
   * `run` whose body is handed its transaction's token and, on SQLite, runs with no async scope
   * (no `AsyncLocalStorage`: Node 20's promise hooks stay off, ./async-scope.ts; p-txtoken). Every
   * nested `run`/`together`/`join`/`stepBatch` under `fn` that must join it is given `tx`: one
   * that is not waits for the body to end, as an unrelated caller's does (a deadlock where `fn`
   * awaits it). On PostgreSQL `run`, `tx` undefined.
   */
  runWith<T>(fn: (tx: Tx | undefined) => Promise<T>, within?: Tx): Promise<T>;
  /**
   * The agent's step batch: on SQLite the writes of this busy stretch share one commit (`stepBatch`
   * in ./db.ts); a no-op on PostgreSQL, where a step's writes are grouped by `run`.
   */
  stepBatch(within?: Tx): void;
  /**
   * SQLite: the open step batch commits one turn of the event loop later (./batch-yield.ts):
   * after what this turn's check phase runs next, and after I/O already readable. Absent on PostgreSQL.
   */
  yieldBatch?(): void;
  /**
   * SQLite: `write` right before the open group-commit batch's COMMIT, in it (./batch-yield.ts
   * `beforeCommit`); false with no batch open (the caller writes now). Absent on PostgreSQL.
   */
  beforeCommit?(write: () => void): boolean;
  /**
   * Writes that need no atomicity together, only SQLite's one commit for them (an event and its
   * ledger row): `run` on SQLite; on PostgreSQL `fn` as it is, each statement its own transaction
   * (or the ambient one's), where a transaction of one statement cost BEGIN and COMMIT round trips.
   */
  together<T>(fn: () => Promise<T>, within?: Tx): Promise<T>;
  /** `together` handed its token as `runWith` is (on SQLite `runWith`; on PostgreSQL `fn` as it is). */
  togetherWith<T>(fn: (tx: Tx | undefined) => Promise<T>, within?: Tx): Promise<T>;
  /**
   * `togetherWith` for a body that cannot leave a partial write when it throws (each caller says why
   * at its call, p-savepoint): on SQLite, inside an open batch (group commit, step batch), it joins
   * the batch with no SAVEPOINT and RELEASE, its writes committed with the batch's; its throw undoes
   * nothing (there is nothing to undo) and drops the transaction memos as the savepoint's ROLLBACK TO
   * did. Outside a batch its own transaction, as `togetherWith`. On PostgreSQL `fn` as it is.
   */
  batchedWith<T>(fn: (tx: Tx | undefined) => Promise<T>, within?: Tx): Promise<T>;
  /**
   * `run` for a body whose failure the caller lets end its own transaction (it never catches it
   * and commits): on PostgreSQL, inside a transaction, `fn` joins it with no savepoint (SAVEPOINT
   * and RELEASE protect nothing there and are two statements); `run` on SQLite, where a savepoint
   * costs no round trip.
   */
  join<T>(fn: () => Promise<T>, within?: Tx): Promise<T>;
  /**
   * `fn` once the transaction this call is made in has ended, in a microtask when none is open:
   * for work that must read what it committed (a queued run's drain after its send's COMMIT,
   * p-aftercommit). PostgreSQL: after its COMMIT (or ROLLBACK) answered (`SqlClient.afterTransaction`).
   * SQLite: after the body's COMMIT (or ROLLBACK, or its hand-over to the open batch: this
   * connection reads what it wrote anyway). `fn` must not throw.
   */
  afterTransaction(fn: () => void, within?: Tx): void;
  /**
   * PostgreSQL: `fn` outside the transaction this call is made in (`SqlClient.outside`): it and the
   * work it starts send their statements on the pool, each its own, not in that transaction.
   * Absent on SQLite, whose bodies are joined by their token (or wait for the open one: one
   * connection).
   */
  outside?<T>(fn: () => T): T;
}

/** What a service sees of the App's store: its backend and its transactions. */
export interface StoreView {
  readonly kind: 'sqlite' | 'postgres';
  readonly transactions: StoreTransactions;
}

/** `StoreTransactions.beforeCommit` on SQLite: false with no group-commit batch open on the handle. */
function beforeBatchCommit(handle: () => Db, write: () => void): boolean {
  let db: Db;
  try {
    db = handle();
  } catch {
    return false; // no database: nothing to commit
  }
  if (!db.open || !db.inTransaction || !inBatch(db)) return false;
  beforeCommit(db, write);
  return true;
}

export function sqliteTransactions(db: () => Db): StoreTransactions {
  const run = <T>(fn: () => Promise<T>, within?: Tx) => atomicallyAsync(db, fn, within);
  const runWith = <T>(fn: (tx: Tx | undefined) => Promise<T>, within?: Tx) => atomicallyWith(db, fn, within);
  return {
    run,
    runWith,
    stepBatch: (within) => stepBatch(db, within),
    yieldBatch: () => yieldBatch(db),
    beforeCommit: (write) => beforeBatchCommit(db, write),
    together: run,
    togetherWith: runWith,
    batchedWith: (fn, within) => atomicallyWith(db, fn, within, false),
    join: run,
    afterTransaction: (fn, within) => afterBody(db, fn, within),
  };
}

export function postgresTransactions(sql: SqlClient): StoreTransactions {
  return {
    run: (fn) => sql.transaction(() => fn()),
    runWith: (fn) => sql.transaction(() => fn(undefined)),
    stepBatch: () => {},
    together: (fn) => fn(),
    togetherWith: (fn) => fn(undefined),
    batchedWith: (fn) => fn(undefined),
    join: (fn) => sql.joined(() => fn()),
    afterTransaction(fn) {
      if (sql.inTransaction()) sql.afterTransaction(fn);
      else queueMicrotask(fn);
    },
    outside: (fn) => sql.outside(fn),
  };
}
