/**
 * The message search index written from a log (issue 17 item 2, SQLite migration 5). A message's
 * INSERT and its parts' UPDATE append its id to `message_search_pending` (one row in a one-b-tree
 * table) instead of writing `message_search_docs` and the FTS5 index in the step's commit: the
 * triggers parsed the parts JSON four times a write, indexed a step's two messages twice each (a
 * message is inserted, then updated with its final parts) and flushed an FTS5 segment, with its
 * merges, into every commit (≈8 of a tool step's 31 WAL frames).
 *
 * `catchUpMessageSearch` indexes what the log names, in one transaction: a message with an indexed
 * row gets it refreshed (its rowid, the write order searches rank "newest" by, stays), a new one
 * gets a row in the order it was first logged, a deleted one is dropped from the log (its delete
 * trigger removed the indexed row at once). A search runs it first, so it sees every committed
 * message of every process. So the log stays short without a search, a process that writes a
 * message catches up about CATCH_UP_DELAY_MS later (`catchUpSoon`) and when it closes its database,
 * both without waiting for another process's write lock (a busy store retries later; the log is
 * shared, so any process's catch-up covers every process's writes).
 * @module
 */
import type BetterSqlite3 from 'better-sqlite3';
import { isBusy } from './busy';
import { bodyOf, toolsOf } from './migrations/session-search';
import { storeWarning } from './store-warnings';
import { runTransactionStatement as tx } from './transaction-statements';

type Db = BetterSqlite3.Database;

/**
 * How long after a message write its process catches the index up (once per delay at most). A
 * catch-up is a transaction of its own: one for every step costs more CPU than the triggers did
 * (bench/search-index-step.mjs: even at about two steps a catch-up), so it waits for a few steps
 * of a model that answers in a second or so; longer would hold the write lock (and the service's
 * event loop) for more messages at once.
 */
export const CATCH_UP_DELAY_MS = 2000;

const ANY_PENDING = 'SELECT 1 FROM message_search_pending LIMIT 1';
// The indexed rows of logged messages, refreshed in place (the docs' update trigger re-indexes
// the body). Before the inserts below, so a message indexed now is not refreshed again.
const REFRESH = `UPDATE message_search_docs AS d SET tools = ${toolsOf('m.parts')}, body = ${bodyOf('m.parts')}
  FROM messages m
  WHERE m.id = d.message_id AND d.message_id IN (SELECT message_id FROM message_search_pending)`;
// Messages without an indexed row, in the order they were first logged (their insert order).
const ADD = `INSERT INTO message_search_docs (message_id, session_id, role, tools, created_at, body)
  SELECT m.id, m.session_id, m.role, ${toolsOf('m.parts')}, m.created_at, ${bodyOf('m.parts')}
    FROM (SELECT message_id, min(id) AS first FROM message_search_pending GROUP BY message_id) p
    JOIN messages m ON m.id = p.message_id
   WHERE NOT EXISTS (SELECT 1 FROM message_search_docs d WHERE d.message_id = p.message_id)
   ORDER BY p.first`;
const CLEAR = 'DELETE FROM message_search_pending';

/** Whether the log names a message; false on a database older than migration 5 (no log). */
function anyPending(db: Db): boolean {
  let statement: BetterSqlite3.Statement;
  try {
    statement = db.prepare(ANY_PENDING);
  } catch {
    return false; // no log table: the old triggers index every write themselves
  }
  return statement.get() !== undefined;
}

/** Index the logged messages and empty the log (inside the caller's transaction). */
function indexPending(db: Db): void {
  db.prepare(REFRESH).run();
  db.prepare(ADD).run();
  db.prepare(CLEAR).run();
}

/**
 * Bring the index up to date with every committed message write, in one transaction (a savepoint
 * inside an open one). Waits for the write lock like any write. A no-op on a read-only handle
 * (it searches the index as the last catch-up left it) and when the log is empty.
 */
export function catchUpMessageSearch(db: Db): void {
  if (!db.open || db.readonly || !anyPending(db)) return;
  db.transaction(() => indexPending(db))();
}

/**
 * The background catch-up: at once if no transaction is open and no other process holds the
 * write lock, else again after CATCH_UP_DELAY_MS. Never waits on the busy timeout. Returns
 * whether the log is empty now.
 */
export function catchUpIfFree(db: Db): boolean {
  if (!db.open || db.readonly) return true;
  if (db.inTransaction) return false;
  if (!anyPending(db)) return true;
  const timeout = db.pragma('busy_timeout', { simple: true }) as number;
  db.pragma('busy_timeout = 0');
  try {
    tx(db, 'begin');
  } catch (error) {
    if (isBusy(error)) return false;
    throw error;
  } finally {
    db.pragma(`busy_timeout = ${timeout}`);
  }
  try {
    indexPending(db);
    tx(db, 'commit');
    return true;
  } catch (error) {
    if (db.inTransaction) tx(db, 'rollback');
    throw error;
  }
}

const armed = new WeakSet<Db>();

/**
 * A message was written: catch the index up about CATCH_UP_DELAY_MS from now, unless that is
 * already planned. The timer is unref'd (a closing database catches up itself, ./db.ts).
 */
export function catchUpSoon(db: Db, delayMs = CATCH_UP_DELAY_MS): void {
  if (armed.has(db)) return;
  armed.add(db);
  setTimeout(() => {
    armed.delete(db);
    let done = true;
    try {
      done = catchUpIfFree(db);
    } catch (error) {
      storeWarning(db, `svc: the message search index could not catch up: ${(error as Error).message}`);
    }
    if (!done) catchUpSoon(db, delayMs);
  }, delayMs).unref();
}
