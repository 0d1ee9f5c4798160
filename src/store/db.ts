/**
 * SQLite via better-sqlite3: WAL, foreign keys, a busy timeout, transactions that start with
 * BEGIN IMMEDIATE and retry a busy start (./busy.ts), and numbered forward-only migrations applied
 * at open under one exclusive transaction, so processes opening a new data dir at once migrate it
 * once. A locked, read-only or corrupt database is a clear error naming the file and what to do,
 * never a silent reset: nothing is written to a file svc cannot read as its database.
 * @module
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type BetterSqlite3 from 'better-sqlite3';
import { SvcError } from '../errors';
import { scopedStorage } from './async-scope';
import { beforeCommitRun, yieldedOnce } from './batch-yield';
import { immediateTransactions, retryBusy } from './busy';
import { startCheckpointer, stopCheckpointer } from './checkpointer';
import { newPrivateFile, usableDataDir } from './data-dir';
import { dbError, refuseReadOnlyFile } from './db-errors';
import { cacheStatements, closingCatchUp } from './db-handle';
import { checkpointWhenIdle } from './idle-checkpoint';
import { migrate } from './migrate';
import { migrations as allMigrations, type Migration } from './migrations/index';
import { loadSqlite } from './sqlite-driver';
import { type StoreWarn, setStoreWarn, storeWarning } from './store-warnings';
import { templatePath, writeTemplate } from './template';
import { clearTransactionMemos, endsClearMemos } from './transaction-memo';
import { runTransactionStatement as tx } from './transaction-statements';
import { checkedBodies, missedToken, refuseMissedToken, txCheckOn } from './tx-check';

export { migrate, schemaVersion } from './migrate';
export { transactionMemo } from './transaction-memo';

export type Db = BetterSqlite3.Database;

/**
 * Run synchronous writes in one transaction (one commit instead of one per statement; nested
 * calls become savepoints). The transaction joins the turn's group commit (groupCommit below):
 * the rows commit together at the end of this turn of the event loop, with the other writes of
 * the turn. When the database cannot be opened the writes run as they are and fail (or not) on
 * their own, with their own messages.
 */
export function atomically<T>(db: () => Db, fn: () => T): T {
  let handle: Db;
  try {
    handle = db();
  } catch {
    return fn();
  }
  groupCommit(handle);
  return handle.transaction(fn)();
}

/**
 * `atomically` for an async body whose awaits are the async repositories (issue 18): the SQLite
 * backend resolves them at once, so the body still runs within one turn of the event loop and the
 * transaction is never held across an I/O wait. One body at a time per connection (two
 * interleaved bodies' savepoints would not nest); a call from inside a body joins it. Inside an
 * open batch (group commit, step batch) the body is a savepoint of the batch and the batch's
 * scheduled commit waits for the body to end, so a step's writes stay one commit.
 *
 * Its own cost is one promise (the `then` on the body's), not an async function's chain (7 a
 * transaction, the largest group of a tool step's promises, issue 17): a body with the connection
 * free starts at once, in the caller's stretch of code; only a body that finds another open
 * waits, in a queue of the connection, for the ones before it to end.
 *
 * A call from inside a body finds it through the async scope (`AsyncLocalStorage`, ./async-scope.ts),
 * or through `within`, the body's token (`atomicallyWith`), when it is still open.
 */
export function atomicallyAsync<T>(db: () => Db, fn: () => Promise<T>, within?: TxToken): Promise<T> {
  return atomicallyBody(db, fn, within, 'scoped');
}

/**
 * The token of an open transaction body (`atomicallyWith`): a nested `atomicallyAsync`,
 * `atomicallyWith` or `stepBatch` given it joins that body while it is open; once it ended, the
 * call is its own, as any other.
 */
export interface TxToken {
  readonly db: Db;
  readonly open: boolean;
}

/**
 * `atomicallyAsync` whose body is handed its token and runs with no async scope: no
 * `AsyncLocalStorage` scope entered, so Node 20's promise hooks stay off and its promises are not
 * hooked (≈ 15–20 µs of toggles a body, issue 17; p-txtoken). A nested call finds the body only
 * through the token: every `atomicallyAsync`/`atomicallyWith`/`stepBatch` under `fn` that must join
 * it is given `tx`; one that is not waits for the body to end, as an unrelated caller's does (a
 * deadlock where `fn` awaits it). Inside an open body (the token `within`, or the async scope)
 * `fn` joins it and is handed that body's token. `undo` false: no savepoint inside an open batch (`ownBody`).
 */
export function atomicallyWith<T>(
  db: () => Db,
  fn: (tx: TxToken | undefined) => Promise<T>,
  within?: TxToken,
  undo = true,
): Promise<T> {
  return atomicallyBody(db, fn, within, undo ? 'token' : 'batched');
}

/** `batched`: a token body that cannot leave a partial write when it throws (`atomicallyWith`'s `undo`). */
type BodyKind = 'scoped' | 'token' | 'batched';
function atomicallyBody<T>(
  db: () => Db,
  fn: (tx: AsyncBody | undefined) => Promise<T>,
  within: TxToken | undefined,
  kind: BodyKind,
): Promise<T> {
  let handle: Db;
  try {
    handle = db();
  } catch {
    return joinedBody(fn, undefined);
  }
  if (within?.open && within.db === handle) return joinedBody(fn, within as AsyncBody);
  const scope = asyncScope.getStore();
  if (scope?.open && scope.db === handle) return joinedBody(fn, scope);
  const waiting = bodyQueues.get(handle);
  if (!waiting) {
    bodyQueues.set(handle, []);
    return ownBody(handle, fn, kind);
  }
  // The check (./tx-check.ts): a call from inside an open token body, not given its token, throws.
  const missed = txCheckOn()
    ? missedToken(handle, kind === 'scoped' ? 'atomicallyAsync' : 'atomicallyWith')
    : undefined;
  if (missed) return Promise.reject(missed);
  return new Promise<void>((start) => waiting.push(start)).then(() => ownBody(handle, fn, kind));
}
/** A body with no transaction of its own (inside one, or no database): as it answers, a throw a rejection. */
function joinedBody<T>(fn: (tx: AsyncBody | undefined) => Promise<T>, tx: AsyncBody | undefined): Promise<T> {
  try {
    return fn(tx);
  } catch (error) {
    return Promise.reject(error);
  }
}
/**
 * The bodies waiting for their connection, per connection with a body open (an empty queue: one
 * open, none waiting). The connection is free when the last one ended.
 */
const bodyQueues = new WeakMap<Db, (() => void)[]>();

/**
 * A body in its own transaction (or a savepoint of the open batch): committed, or rolled back when
 * it fails. `scoped`: in the async scope (`atomicallyAsync`), else with its token only (`atomicallyWith`);
 * `batched`: inside an open batch no savepoint, a throw drops the memos as a ROLLBACK TO would (p-savepoint).
 */
function ownBody<T>(handle: Db, fn: (tx: AsyncBody) => Promise<T>, kind: BodyKind): Promise<T> {
  const own: AsyncBody = { db: handle, open: true, unpin: false, thenStepBatch: false };
  let outer: Nest;
  try {
    // Inside an open batch the body joins it as a savepoint (none `batched`), and the batch's scheduled
    // commit (a microtask or the next check phase, possibly in the middle of the body) waits for it.
    const inBatch = openBatches.has(handle) && handle.inTransaction;
    if (inBatch) pinnedBatches.set(handle, (pinnedBatches.get(handle) ?? 0) + 1);
    else commitBatch(handle);
    own.unpin = inBatch;
    outer = !handle.inTransaction ? false : inBatch && kind === 'batched' ? 'batch' : true;
    if (outer === true) tx(handle, 'savepoint');
    else if (!outer) retryBusy(() => tx(handle, 'begin'));
  } catch (error) {
    bodyEnded(handle, own);
    return Promise.reject(error);
  }
  let body: Promise<T>;
  // A token body has no scope, but the missed-token check's when it is on (./tx-check.ts).
  const scope = kind === 'scoped' ? asyncScope : txCheckOn() ? checkedBodies : undefined;
  try {
    body = scope ? scope.enter(own, () => fn(own)) : fn(own);
  } catch (error) {
    scope?.leave();
    return Promise.reject(bodyFailed(handle, own, outer, error));
  }
  return body.then(
    (result) => {
      scope?.leave();
      try {
        commitBody(handle, own, outer);
      } catch (error) {
        throw bodyFailed(handle, own, outer, error);
      }
      bodyEnded(handle, own);
      return result;
    },
    (error: unknown) => {
      scope?.leave();
      throw bodyFailed(handle, own, outer, error);
    },
  );
}
/** The body's place: its own transaction (false), a savepoint (true), the batch's with no savepoint. */
type Nest = boolean | 'batch';
function commitBody(handle: Db, own: AsyncBody, outer: Nest): void {
  if (!handle.inTransaction || outer === 'batch') return;
  if (outer) tx(handle, 'release');
  // The body asked for a step batch (`stepBatch`): its transaction becomes that batch.
  else if (own.thenStepBatch) openStepBatch(handle);
  else tx(handle, 'commit');
}
/** The body's writes rolled back (its savepoint's, inside a batch), the body ended: answers its error. */
function bodyFailed(handle: Db, own: AsyncBody, outer: Nest, error: unknown): unknown {
  try {
    if (handle.open && handle.inTransaction) {
      if (outer === 'batch') clearTransactionMemos(handle);
      else if (outer) {
        tx(handle, 'rollbackTo');
        tx(handle, 'release');
      } else tx(handle, 'rollback');
    }
  } finally {
    bodyEnded(handle, own);
  }
  return error;
}
/** The body is over: its scope closed, its batch unpinned, the next waiting body started. */
function bodyEnded(handle: Db, own: AsyncBody): void {
  own.open = false;
  if (own.unpin) unpinBatch(handle);
  if (own.after) for (const fn of own.after.splice(0)) queueMicrotask(fn);
  const waiting = bodyQueues.get(handle);
  const next = waiting?.shift();
  if (next) next();
  else bodyQueues.delete(handle);
}
/** Open async bodies per connection inside a batch; the batch commits when the last one ends. */
const pinnedBatches = new Map<Db, number>();
const commitAfterBodies = new Set<Db>();
function unpinBatch(handle: Db): void {
  const left = (pinnedBatches.get(handle) ?? 1) - 1;
  if (left > 0) {
    pinnedBatches.set(handle, left);
    return;
  }
  pinnedBatches.delete(handle);
  if (commitAfterBodies.delete(handle)) commitBatch(handle);
}
/** The batch's own scheduled commit: deferred while an async body is open inside it. */
function scheduledCommit(db: Db): void {
  if (pinnedBatches.has(db)) {
    if (openBatches.has(db)) commitAfterBodies.add(db);
    return;
  }
  commitBatch(db);
}
// Its promise hooks are on only while a scoped body is open (./async-scope.ts).
interface AsyncBody extends TxToken {
  db: Db;
  open: boolean;
  unpin: boolean;
  /** `stepBatch` was called in the body: at its end its transaction is the step batch, not committed. */
  thenStepBatch: boolean;
  /** `afterBody`'s functions: queued as microtasks at its end. */
  after?: (() => void)[];
}

/**
 * `fn` once the body this call is made in has ended (its COMMIT or ROLLBACK, or its hand-over to
 * the open batch), found by its token `within` or the async scope; in a microtask when none is open.
 */
export function afterBody(handle: () => Db, fn: () => void, within?: TxToken): void {
  let db: Db | undefined;
  try {
    db = handle();
  } catch {
    db = undefined;
  }
  const body = within?.open && within.db === db ? (within as AsyncBody) : asyncScope.getStore();
  if (!db || !body?.open || body.db !== db) queueMicrotask(fn);
  else if (body.after) body.after.push(fn);
  else body.after = [fn];
}
const asyncScope = scopedStorage<AsyncBody>();

/**
 * Group commit: the hot writes of the agent (run ledger events, messages, run updates) call this
 * first. Outside a transaction it opens one (`BEGIN IMMEDIATE`) that commits as soon as the
 * current synchronous stretch of code and the promise callbacks already queued behind it are done
 * (a microtask), so the writes of that stretch — a step's message, ledger, usage and event rows,
 * spread over several functions — are one commit instead of one per statement, and the write lock
 * is never held across I/O (other processes on the same svc.db wait no longer than before).
 * Nested `db.transaction()` calls become savepoints. The batch is committed before the database
 * closes and when the process exits. On in the HTTP service (enableGroupCommit) or with
 * `SVC_GROUP_COMMIT=1`; elsewhere every statement commits on its own, as before.
 */
export function groupCommit(db: Db): void {
  if (groupCommitOff) return;
  // The service's WAL is checkpointed when its store is idle, not by a request's COMMIT.
  if (idleCheckpoints) checkpointWhenIdle(db);
  if (db.inTransaction || !db.open) return;
  try {
    tx(db, 'begin');
  } catch {
    return; // busy: this write commits on its own, waiting on the busy timeout as before
  }
  openBatches.add(db);
  if (openBatches.size === 1) process.once('exit', commitAllBatches);
  // A step batch started (or this one made one, `stepBatch`) since: it commits at the check phase.
  queueMicrotask(() => {
    if (!stepBatches.has(db)) scheduledCommit(db);
  });
}

/** A group commit's batch is open on the handle (its COMMIT runs `beforeCommit`'s writes first). */
export const inBatch = (db: Db): boolean => openBatches.has(db);

/** Commit the turn's batch now (before a close, at exit); a no-op without one. */
export function commitBatch(db: Db): void {
  stepBatches.delete(db);
  if (!openBatches.delete(db)) return;
  if (openBatches.size === 0) process.removeListener('exit', commitAllBatches);
  if (!db.open || !db.inTransaction) return;
  // With SVC_CHECKPOINT_WORKER=1 the service's WAL is checkpointed by a worker (./checkpointer.ts).
  if (checkpointWorker) startCheckpointer(db);
  beforeCommitRun(db);
  try {
    tx(db, 'commit');
  } catch (error) {
    try {
      tx(db, 'rollback');
    } catch {
      // nothing left to roll back
    }
    storeWarning(db, `svc: a group commit failed: ${(error as Error).message}`);
  }
}

/**
 * Step batch: the agent's step loop calls this before it records a part of the model's stream.
 * Outside a transaction it opens one (`BEGIN IMMEDIATE`) that commits when the event loop next
 * reaches its check phase (setImmediate), that is as soon as this process has nothing left to
 * compute and would wait for I/O: the writes of a step that arrive in one busy stretch (the step's
 * start, the assistant message, the tool call and the writes of a quick tool, its result, the
 * step's end with its usage and ledger rows) are one commit instead of several, and the write lock
 * is never held while the process waits (for the model, a slow tool, a timer). On in every process
 * (also `svc run`, where group commit is off: a run's start-up stretch is not covered);
 * `SVC_GROUP_COMMIT=0` turns it off with group commit.
 */
export function stepBatch(handle: () => Db, within?: TxToken): void {
  if (stepBatchOff) return;
  let db: Db;
  try {
    db = handle();
  } catch {
    return; // no database: the writes fail (or not) on their own
  }
  if (!db.open) return;
  if (db.inTransaction) {
    // Already in one: the turn's group-commit batch becomes the step batch (its commit moves to
    // the check phase); an async transaction's body (a compat request's own writes) hands its
    // transaction over to the step batch when it ends, instead of committing. The writes that
    // follow in this busy stretch join it instead of committing on their own.
    if (openBatches.has(db)) {
      if (!stepBatches.has(db)) {
        stepBatches.add(db);
        setImmediate(() => yieldedOnce(db, scheduledCommit));
      }
      return;
    }
    // The body is found through its token (`atomicallyWith`) or the async scope.
    const body = within?.open ? (within as AsyncBody) : asyncScope.getStore();
    if (body?.open && body.db === db) body.thenStepBatch = true;
    else if (txCheckOn()) refuseMissedToken(db, 'stepBatch');
    return;
  }
  try {
    tx(db, 'begin');
  } catch {
    return; // busy: the writes commit on their own, waiting on the busy timeout as before
  }
  openStepBatch(db);
}

/** The open transaction becomes the step batch: committed at the next check phase. */
function openStepBatch(db: Db): void {
  openBatches.add(db);
  stepBatches.add(db);
  if (openBatches.size === 1) process.once('exit', commitAllBatches);
  setImmediate(() => yieldedOnce(db, scheduledCommit));
}

const stepBatchOff = process.env.SVC_GROUP_COMMIT === '0';
let groupCommitOff = process.env.SVC_GROUP_COMMIT !== '1';
/**
 * Group commits start their handle's checkpoint worker (`SVC_CHECKPOINT_WORKER=1`, ./checkpointer.ts):
 * read where group commit is turned on, not on every commit.
 */
let checkpointWorker = !groupCommitOff && process.env.SVC_CHECKPOINT_WORKER === '1';
/** Idle checkpoints (./idle-checkpoint.ts) unless `SVC_IDLE_CHECKPOINT=0` or the worker does it: read as above. */
let idleCheckpoints = !groupCommitOff && !checkpointWorker && process.env.SVC_IDLE_CHECKPOINT !== '0';

/**
 * Turn group commit on for this process (the HTTP service, where many runs share one process and
 * its stretches of code are short); `SVC_GROUP_COMMIT=0` keeps it off. CLI processes leave it
 * off: ten `svc run` at once on one svc.db wait on each other's write lock, and a run's start-up
 * stretch is long.
 */
export function enableGroupCommit(): void {
  if (process.env.SVC_GROUP_COMMIT === '0') return;
  groupCommitOff = false;
  checkpointWorker = process.env.SVC_CHECKPOINT_WORKER === '1';
  idleCheckpoints = !checkpointWorker && process.env.SVC_IDLE_CHECKPOINT !== '0';
}
/** Whether group commit is on in this process (the test suite's shared-worker check, test/helpers/shared-file-guard.ts). */
export function groupCommitEnabled(): boolean {
  return !groupCommitOff;
}
const openBatches = new Set<Db>();
/** The open batches that commit at the check phase (step batches), not after the turn's microtasks. */
const stepBatches = new Set<Db>();
function commitAllBatches(): void {
  for (const db of [...openBatches]) commitBatch(db);
}

export interface OpenDbOptions {
  dataDir: string;
  /** Defaults to the full list; tests pass a prefix to build an "old" database. */
  migrations?: readonly Migration[];
  readonly?: boolean;
  busyTimeoutMs?: number;
  /**
   * Where the pre-migrated template database lives (the user's cache dir, ./template.ts): a new
   * database starts as a copy of it, and is the template when there is none yet.
   */
  templateDir?: string;
  /** Where background failures are reported (./store-warnings.ts); `process.emitWarning` without. */
  warn?: StoreWarn;
}

export const DB_FILE = 'svc.db';

export function openDb(options: OpenDbOptions): Db {
  const file = join(options.dataDir, DB_FILE);
  if (!options.readonly) usableDataDir(options.dataDir);
  const Database = loadSqlite();
  const migrations = options.migrations ?? allMigrations;
  // Only the full schema has a template (tests that build an "old" database pass a prefix).
  const template =
    options.templateDir && !options.readonly && !options.migrations
      ? templatePath(options.templateDir, migrations)
      : undefined;
  const made = options.readonly ? 'existed' : newPrivateFile(file, template);
  let db: Db;
  try {
    if (options.readonly && !existsSync(file)) throw new SvcError('not_found', `no database at ${file}`);
    if (!options.readonly) refuseReadOnlyFile(file);
    db = new Database(file, {
      readonly: options.readonly ?? false,
      fileMustExist: options.readonly ?? false,
    });
  } catch (error) {
    throw dbError(error, file);
  }
  try {
    db.pragma(`busy_timeout = ${options.busyTimeoutMs ?? 5000}`);
    // Reading the schema is the cheapest way to find out the file is not a database at all, and
    // it comes before anything that writes (journal mode, migrations).
    db.prepare('SELECT count(*) FROM sqlite_master').get();
    // A new database switches to WAL once; another process doing the same at once is waited for.
    if (!options.readonly) retryBusy(() => db.pragma('journal_mode = WAL'));
    db.pragma('foreign_keys = ON');
    db.pragma('synchronous = NORMAL');
    // Statement journals (an UPDATE of a message runs the session-search triggers: SQLite keeps
    // the pages it may have to roll back) and transient sort/index data stay in memory: with the
    // default they spilled to a new file in /var/tmp on every step (~140 page writes per step).
    db.pragma('temp_store = MEMORY');
    // A 4 MB page cache (better-sqlite3's build sets 16 MB): the hot pages of a session store
    // fit, and a long-running service's RSS stops growing with its database (docs/performance-log.md).
    db.pragma('cache_size = -4000');
    if (!options.readonly) migrate(db, migrations);
    if (template && made === 'empty') writeTemplate(db, template);
  } catch (error) {
    db.close();
    throw dbError(error, file);
  }
  if (options.warn) setStoreWarn(db, options.warn);
  immediateTransactions(db);
  endsClearMemos(db);
  cacheStatements(db);
  const close = db.close.bind(db);
  db.close = () => {
    commitBatch(db);
    closingCatchUp(db);
    stopCheckpointer(db);
    return close();
  };
  return db;
}
