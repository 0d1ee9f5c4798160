/**
 * Rows of an append-only table held while a SQLite write transaction lasts and written by one
 * multi-row INSERT (issue 17 item 3, p-sqlev): a compat request's ≈ 14 `session_events` INSERTs
 * were one statement each. The first row of a transaction is inserted at once (its rowid is the
 * id SQLite gives it); each later one is answered the next id (no other writer inserts until the
 * transaction ends: BEGIN IMMEDIATE, ./transaction-memo.ts) and held. What is held is written,
 * in order and with those ids, before any transaction statement (BEGIN, COMMIT, SAVEPOINT,
 * RELEASE: `flushHeld` from ./transaction-memo.ts), before a read of the table the owner makes
 * (`flush`), and every `MAX_ROWS` rows; a ROLLBACK or ROLLBACK TO drops it (those rows were
 * rolled back as they would have been once written: what is held is only ever written since the
 * innermost savepoint or transaction start). Outside a transaction, and on a handle not opened by
 * `openDb`, every row is inserted at once, as before.
 * @module
 */
import type BetterSqlite3 from 'better-sqlite3';
import { onHeldFlush, transactionMemo } from './transaction-memo';

type Db = BetterSqlite3.Database;
type Statement = BetterSqlite3.Statement;

/** Rows a multi-row INSERT writes at most (its host parameters: `MAX_ROWS` × the columns). */
export const MAX_ROWS = 64;

export interface HeldRows {
  /** Inserts a row (`values` in the order of the `columns` given, `id` not among them); answers its id. */
  insert(values: readonly unknown[]): number;
  /** Writes what is held now (before a read of the table on this handle). */
  flush(): void;
}

/**
 * The held rows of `table` on `db`, one per handle and table (two stores on one handle share
 * them, so their ids never collide). `table` has an INTEGER PRIMARY KEY `id`.
 */
export function heldRows(db: Db, table: string, columns: readonly string[]): HeldRows {
  let tables = byHandle.get(db);
  if (!tables) {
    tables = new Map();
    byHandle.set(db, tables);
  }
  const key = `${table}(${columns.join(', ')})`;
  let rows = tables.get(key);
  if (!rows) {
    rows = createHeldRows(db, table, columns);
    tables.set(key, rows);
  }
  return rows;
}
const byHandle = new WeakMap<Db, Map<string, HeldRows>>();

function createHeldRows(db: Db, table: string, columns: readonly string[]): HeldRows {
  const one = db.prepare(
    `INSERT INTO ${table} (${columns.join(', ')}) VALUES (${columns.map(() => '?').join(', ')})`,
  );
  const tuple = `(${['id', ...columns].map(() => '?').join(', ')})`;
  const many = new Map<number, Statement>();
  const statementOf = (count: number) => {
    let statement = many.get(count);
    if (!statement) {
      statement = db.prepare(
        `INSERT INTO ${table} (id, ${columns.join(', ')}) VALUES ${Array.from({ length: count }, () => tuple).join(', ')}`,
      );
      many.set(count, statement);
    }
    return statement;
  };
  // The memo's owner: the next id while the transaction that inserted the last row lasts.
  const owner = {};
  // The held rows' values, `id` first, flat; `count` rows.
  let held: unknown[] = [];
  let count = 0;
  const drop = () => {
    if (count) {
      held = [];
      count = 0;
    }
  };
  const write = () => {
    if (!count) return;
    const values = held;
    const rows = count;
    held = [];
    count = 0;
    statementOf(rows).run(...values);
  };
  // Written before a transaction statement or a read; dropped by a rollback, or when the
  // transaction they were held in ended unseen (SQLite rolls back by itself on some errors).
  const end = (kept: boolean) => {
    if (kept && db.inTransaction) write();
    else drop();
  };
  onHeldFlush(db, end);
  return {
    insert(values) {
      const memo = transactionMemo<number>(db, owner);
      const next = memo?.get('next');
      if (memo === undefined || next === undefined) {
        // The transaction's first row (or none open): held rows here are of one that ended unseen.
        drop();
        const id = Number(one.run(...values).lastInsertRowid);
        memo?.set('next', id + 1);
        return id;
      }
      memo.set('next', next + 1);
      held.push(next, ...values);
      if (++count === MAX_ROWS) write();
      return next;
    },
    flush: () => end(true),
  };
}
