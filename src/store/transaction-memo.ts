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
    const tx = transaction(fn);
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
