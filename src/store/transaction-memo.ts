/**
 * Per-transaction memos of a SQLite handle (`transactionMemo`), dropped at every transaction start
 * and end; installed on each handle by `openDb` (./db.ts).
 * @module
 */
import type BetterSqlite3 from 'better-sqlite3';

type Db = BetterSqlite3.Database;

/**
 * Values that hold while the connection's current write transaction lasts, per owner (the run
 * ledger's next `seq` per run, ../runs/run-events.ts). SQLite transactions here start with
 * `BEGIN IMMEDIATE` (or, deferred, hold the write lock from their first write on): once this
 * connection has written, no other connection or process writes until COMMIT, so what it read
 * or wrote since stays true until the transaction ends. Every memo is dropped when a transaction
 * starts, commits or rolls back, a savepoint included (`exec` of BEGIN/COMMIT/END/ROLLBACK, a
 * `db.transaction()` function that returns at the top or throws at any depth); undefined outside
 * a transaction and on a handle not opened by `openDb`. A caller records a value only after a
 * write of its own in the transaction succeeded.
 */
export function transactionMemo<V>(db: Db, owner: object): Map<string, V> | undefined {
  const memos = transactionMemos.get(db);
  if (!memos) return undefined;
  if (!db.inTransaction) {
    // Ended in a way not seen here (SQLite rolls a transaction back by itself on some errors).
    if (memos.size) memos.clear();
    return undefined;
  }
  let memo = memos.get(owner);
  if (!memo) {
    memo = new Map();
    memos.set(owner, memo);
  }
  return memo as Map<string, V>;
}
const transactionMemos = new WeakMap<Db, Map<object, Map<string, unknown>>>();
const TRANSACTION_END = /\b(BEGIN|COMMIT|END|ROLLBACK)\b/i;

/**
 * What a transaction statement does to the handle's held rows (./held-rows.ts), told to them
 * before it runs: `write` (COMMIT, a read of their table: written now), `drop` (BEGIN, ROLLBACK:
 * none are kept), `savepoint` (SAVEPOINT: the rows held so far are outside it), `release`
 * (RELEASE: the savepoint's rows are its parent's), `rollbackTo` (ROLLBACK TO: the savepoint's
 * rows are dropped, and the ones before it that were written inside it are held again).
 */
export type HeldEvent = 'write' | 'drop' | 'savepoint' | 'release' | 'rollbackTo';

/**
 * Registers `on` for the handle's held rows: told of every transaction statement run through
 * `exec`, `db.transaction()` or `runTransactionStatement` (../store/transaction-statements.ts).
 */
export function onHeldEvent(db: Db, on: (event: HeldEvent) => void): void {
  const listeners = heldListeners.get(db);
  if (listeners) listeners.push(on);
  else heldListeners.set(db, [on]);
}
const heldListeners = new WeakMap<Db, ((event: HeldEvent) => void)[]>();

/** Tells the handle's held rows (./held-rows.ts) of `event`: `write` before a read of their table. */
export function flushHeld(db: Db, event: HeldEvent = 'write'): void {
  const listeners = heldListeners.get(db);
  if (listeners) for (const on of listeners) on(event);
}
const ROLLBACK = /^\s*ROLLBACK\b/i;

/** Drops the handle's transaction memos now (a transaction statement run without `exec`). */
export function clearTransactionMemos(db: Db): void {
  const memos = transactionMemos.get(db);
  if (memos?.size) memos.clear();
}

/** Drops the handle's transaction memos at every transaction start and end (`transactionMemo`). */
export function endsClearMemos(db: Db): void {
  const memos = new Map<object, Map<string, unknown>>();
  transactionMemos.set(db, memos);
  const clear = () => {
    if (memos.size) memos.clear();
  };
  const exec = db.exec.bind(db);
  db.exec = ((sql: string) => {
    // Held rows go in before whatever `exec` runs (a transaction statement, a savepoint, DDL);
    // a ROLLBACK (TO) drops them (no held row is older than a savepoint `exec` opened: it wrote them).
    flushHeld(db, ROLLBACK.test(sql) ? 'drop' : 'write');
    if (!TRANSACTION_END.test(sql)) return exec(sql);
    clear();
    try {
      return exec(sql);
    } finally {
      clear();
    }
  }) as Db['exec'];
  const transaction = db.transaction.bind(db);
  // Whether each `db.transaction()` call in progress began the transaction (else a savepoint).
  const tops: boolean[] = [];
  db.transaction = ((fn: (...args: unknown[]) => unknown) => {
    // Its held rows written before its COMMIT, dropped by its ROLLBACK; as a savepoint, the rows
    // held before it outside it, its own its parent's at its RELEASE, dropped by its ROLLBACK TO.
    const tx = transaction(function heldTold(this: unknown, ...args: unknown[]) {
      const top = tops[tops.length - 1] ?? true;
      flushHeld(db, top ? 'drop' : 'savepoint');
      let result: unknown;
      try {
        result = fn.apply(this, args);
      } catch (error) {
        if (top) flushHeld(db, 'drop');
        else {
          flushHeld(db, 'rollbackTo');
          flushHeld(db, 'release');
        }
        throw error;
      }
      flushHeld(db, top ? 'write' : 'release');
      return result;
    });
    const ending =
      (variant: (...args: unknown[]) => unknown) =>
      (...args: unknown[]) => {
        const top = !db.inTransaction;
        if (top) clear();
        let threw = true;
        tops.push(top);
        try {
          const result = variant(...args);
          threw = false;
          return result;
        } finally {
          tops.pop();
          // Committed or rolled back at the top; a savepoint rolled back when the body threw.
          if (top || threw) clear();
        }
      };
    const wrapped = ending(tx);
    return Object.assign(wrapped, {
      default: wrapped,
      deferred: ending(tx.deferred),
      immediate: ending(tx.immediate),
      exclusive: ending(tx.exclusive),
    });
  }) as Db['transaction'];
}
