/**
 * A step batch whose COMMIT waits one turn of the event loop (p-headfirst, issue 17 item 3): asked
 * for by a streamed compat answer on SQLite in its request's turn, so that its head and role chunk
 * (a check-phase callback queued after the batch's) leave first, and a model answer already
 * readable then is read before the COMMIT (the poll between two check phases does not wait while
 * one is pending), its writes joining the batch. At its check phase the step batch's scheduled
 * commit (./db.ts) asks for the next one instead, once: that one commits whatever asked since, so a
 * busy service cannot put a COMMIT off turn after turn. The write lock is held over no wait. An ask
 * is taken by the next step batch's scheduled commit on that handle (a batch committed otherwise, at
 * a close or the exit, still runs it: then it commits nothing).
 * @module
 */
import type BetterSqlite3 from 'better-sqlite3';

type Db = BetterSqlite3.Database;

const asked = new Set<Db>();

/** The open batch on `handle` commits one loop turn later; a no-op with no transaction open. */
export function yieldBatch(handle: () => Db): void {
  let db: Db;
  try {
    db = handle();
  } catch {
    return; // no database: nothing to commit
  }
  if (db.open && db.inTransaction) asked.add(db);
}

/**
 * A step batch's scheduled commit at its check phase (./db.ts): if asked, queued for the next check
 * phase instead, where it commits, taking any ask made since (once: a busy service cannot put it
 * off); else now.
 */
export function yieldedOnce(db: Db, commit: (db: Db) => void): void {
  if (asked.delete(db))
    setImmediate(() => {
      asked.delete(db);
      commit(db);
    });
  else commit(db);
}

/** Per handle: the writes its open batch makes right before its COMMIT (`beforeCommit`). */
const beforeCommits = new Map<Db, (() => void)[]>();

/**
 * `write` runs right before the COMMIT of the group commit's batch open on `db` (the caller checked
 * one is: ./transactions.ts `beforeCommit`), whatever commits it (its check phase, yielded or
 * not, a close, the exit), in the batch (p-promptheld: a compat run's prompt stack row and
 * `prompt.assembled`, after its model request). `write` must not throw (the COMMIT follows it).
 */
export function beforeCommit(db: Db, write: () => void): void {
  const writes = beforeCommits.get(db);
  if (writes) writes.push(write);
  else beforeCommits.set(db, [write]);
}

/** The batch's COMMIT (./db.ts `commitBatch`): the writes asked for first, in their order. */
export function beforeCommitRun(db: Db): void {
  if (beforeCommits.size === 0) return;
  const writes = beforeCommits.get(db);
  if (!writes) return;
  beforeCommits.delete(db);
  for (const write of writes) write();
}
