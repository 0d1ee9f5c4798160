/**
 * Rows of an append-only table held while a SQLite write transaction lasts and written by one
 * multi-row INSERT (issue 17 item 3, p-sqlev): a compat request's ≈ 14 `session_events` INSERTs
 * were one statement each. The first row of a transaction is inserted at once (its rowid is the
 * id SQLite gives it); each later one is answered the next id (no other writer inserts until the
 * transaction ends: BEGIN IMMEDIATE, ./transaction-memo.ts) and held. What is held is written,
 * in order and with those ids, before the transaction's COMMIT, before a read of the table the
 * owner makes (`flush`), and every `MAX_ROWS` rows. Savepoints write nothing: a SAVEPOINT marks
 * what is held, a ROLLBACK TO drops the rows held since its mark and holds again those before it
 * that a read or a full chunk wrote inside it (SQLite rolled them back), so the table is what one
 * INSERT a row would have left; a ROLLBACK drops all. Outside a transaction, and on a handle not
 * opened by `openDb`, every row is inserted at once, as before.
 * @module
 */
import type BetterSqlite3 from 'better-sqlite3';
import { onHeldEvent, transactionMemo } from './transaction-memo';

type Db = BetterSqlite3.Database;
type Statement = BetterSqlite3.Statement;

/** Rows a multi-row INSERT writes at most (its host parameters: `MAX_ROWS` × the columns). */
export const MAX_ROWS = 64;

export interface HeldRows {
  /** Inserts a row (`values` in the order of the `columns` given, `id` not among them); answers its id. */
  insert(values: readonly unknown[]): number;
  /** Writes what is held now (before a read of the table on this handle). */
  flush(): void;
  /**
   * A row the owner inserted itself, after `flush` (an INSERT whose conflict it handles there, or
   * whose values it reads from the table): its id `id`, the next held row's id follows it.
   */
  inserted(id: number): void;
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
  // The transaction's rows held since it last had none held and no savepoint open, `id` first;
  // `written` of them are in the table. A savepoint's mark: how many rows there were and how many
  // were written when it opened.
  let rows: unknown[][] = [];
  let written = 0;
  let marks: { at: number; written: number }[] = [];
  const reset = () => {
    if (rows.length) rows = [];
    written = 0;
    if (marks.length) marks = [];
  };
  const write = () => {
    while (written < rows.length) {
      const chunk = rows.slice(written, written + MAX_ROWS);
      written += chunk.length;
      statementOf(chunk.length).run(...chunk.flat());
    }
    if (!marks.length) {
      rows = [];
      written = 0;
    }
  };
  onHeldEvent(db, (event) => {
    // Held in a transaction that ended unseen (SQLite rolls back by itself on some errors): gone.
    if (!db.inTransaction || event === 'drop') return reset();
    if (event === 'write') return write();
    if (event === 'savepoint') return void marks.push({ at: rows.length, written });
    const mark = marks[marks.length - 1];
    if (event === 'release') {
      marks.pop();
      if (!marks.length && written === rows.length) rows = [];
      if (!rows.length) written = 0;
      return;
    }
    // ROLLBACK TO: its rows gone; those before it that were written inside it are held again.
    if (!mark) return reset();
    rows.length = mark.at;
    written = mark.written;
  });
  const flush = () => {
    if (!db.inTransaction) reset();
    else if (written < rows.length) write();
  };
  return {
    insert(values) {
      const memo = transactionMemo<number>(db, owner);
      const next = memo?.get('next');
      if (memo === undefined || next === undefined) {
        // The transaction's first row, or the first after a ROLLBACK TO (the rows held before its
        // savepoint written first, so SQLite's next id follows them); none open: as before.
        flush();
        const id = Number(one.run(...values).lastInsertRowid);
        memo?.set('next', id + 1);
        return id;
      }
      memo.set('next', next + 1);
      rows.push([next, ...values]);
      if (rows.length - written === MAX_ROWS) write();
      return next;
    },
    flush,
    inserted(id) {
      transactionMemo<number>(db, owner)?.set('next', id + 1);
    },
  };
}
