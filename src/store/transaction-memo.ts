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
 * Registers `end` for the handle's held rows (./held-rows.ts): called before every transaction
 * statement run through `exec`, `db.transaction()` or `runTransactionStatement`, `kept` false for
 * a ROLLBACK (TO), whose rows are dropped rather than written.
 */
export function onHeldFlush(db: Db, end: (kept: boolean) => void): void {
  const ends = heldEnds.get(db);
  if (ends) ends.push(end);
  else heldEnds.set(db, [end]);
}
const heldEnds = new WeakMap<Db, ((kept: boolean) => void)[]>();

/** Writes (`kept`) or drops the handle's held rows now (./held-rows.ts): before a transaction statement or a read. */
export function flushHeld(db: Db, kept = true): void {
  const ends = heldEnds.get(db);
  if (ends) for (const end of ends) end(kept);
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
    // Held rows go in before whatever `exec` runs (a transaction statement, a savepoint, DDL).
    flushHeld(db, !ROLLBACK.test(sql));
    if (!TRANSACTION_END.test(sql)) return exec(sql);
    clear();
    try {
      return exec(sql);
    } finally {
      clear();
    }
  }) as Db['exec'];
  const transaction = db.transaction.bind(db);
  db.transaction = ((fn: (...args: unknown[]) => unknown) => {
    // The rows held before the body are written before its BEGIN or SAVEPOINT, its own before its
    // COMMIT or RELEASE; a body that throws has its own dropped (they are rolled back with it).
    const tx = transaction(function heldFlushed(this: unknown, ...args: unknown[]) {
      flushHeld(db);
      let result: unknown;
      try {
        result = fn.apply(this, args);
      } catch (error) {
        flushHeld(db, false);
        throw error;
      }
      flushHeld(db);
      return result;
    });
    const ending =
      (variant: (...args: unknown[]) => unknown) =>
      (...args: unknown[]) => {
        const top = !db.inTransaction;
        if (top) clear();
        let threw = true;
        try {
          const result = variant(...args);
          threw = false;
          return result;
        } finally {
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
