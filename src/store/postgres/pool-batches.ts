/**
 * Statements on the pool outside any transaction (issue 18, item 6), sent in batches: those asked
 * for during one turn of the event loop (until its check phase, `setImmediate`) go out together on
 * one connection, in one socket write, answered in order (pg's pipeline mode; each keeps its own
 * Sync, so each is still its own transaction and an error ends only its own statement). On this
 * VM a socket write is most of a statement's cost in svc (docs/performance-log.md): at many requests
 * at once, several statements fall in one turn.
 *
 * What changes for a statement: it may wait for those ahead of it on its connection. So while a
 * transaction of this process is open, a statement that may wait for a lock (any write, a function
 * call, a row lock; plain SELECTs never wait for one) ends its batch: a transaction holding a lock
 * and waiting for a statement of this pool must not find that statement queued behind one waiting
 * for its lock. The statements of a batch run in call order: statements sent without awaiting
 * each other (before: in that order, each on a connection of its own, so run in any order) now run
 * one after another in that order.
 * @module
 */
import type { PoolClient, QueryResult } from 'pg';
import type { Checkouts, Held } from './kept-connection';
import { isStalePlan } from './prepared-names';
import type { StatementClass } from './row-shapes';

/** A statement's answer, called once: the driver's callback form, so a statement makes no promise here. */
export type Answer = (error: Error | null | undefined, result?: QueryResult) => void;

/**
 * What the client's executor sends statements to (these batches, or a transaction's connection).
 * Callbacks rather than promises: the executor makes the statement's one promise (issue 18, item 6:
 * ≈ 20 promises a statement before, docs/performance-log.md).
 */
export type Submit = (text: string, params: unknown[], answer: Answer) => void;

/** A statement and its answer (no `params`: the simple query protocol, as for BEGIN or COMMIT). */
export interface Statement {
  text: string;
  params?: unknown[];
  answer: Answer;
}

type Pending = Required<Statement>;

/** Most statements in one write. */
const MAX_BATCH = 32;

/**
 * The pool's statements in batches. `transactionOpen`: a transaction of this process holds a
 * connection now (then a statement that may wait for a lock ends its batch).
 */
export function pooledBatches(
  checkouts: Checkouts,
  Query: StatementClass,
  transactionOpen: () => boolean,
): Submit {
  let queued: Pending[] = [];
  let scheduled = false;
  const flush = () => {
    scheduled = false;
    const items = queued;
    queued = [];
    for (const batch of batchesOf(items, transactionOpen())) send(checkouts, Query, batch);
  };
  return (text, params, answer) => {
    queued.push({ text, params, answer });
    if (!scheduled) {
      scheduled = true;
      setImmediate(flush);
    }
  };
}

/**
 * The pool's statements, one failed by a kept plan whose result columns changed (its name now
 * retired) sent once more: its own transaction, nothing of it stood. Unnamed, none fails so.
 */
export function againIfStale(submit: Submit): Submit {
  return (text, params, answer) =>
    submit(text, params, (error, result) => {
      if (error && isStalePlan(error)) submit(text, params, answer);
      else answer(error, result);
    });
}

/** Whether a statement may wait for a lock another transaction holds. */
export function mayWait(text: string): boolean {
  return (
    !/^\s*SELECT\b/i.test(text) ||
    /\bsvc_\w+\s*\(|pg_advisory|\bFOR\s+(NO\s+KEY\s+)?UPDATE\b|\bFOR\s+(KEY\s+)?SHARE\b|\bnextval\s*\(/i.test(
      text,
    )
  );
}

/**
 * The batches of one turn, in call order (the order they are sent in, as before: each took a
 * connection in that order). While a transaction of this process is open, a batch ends with the
 * first statement that may wait for a lock (see the module's notes).
 */
export function batchesOf<P extends { text: string }>(items: P[], transactionOpen: boolean): P[][] {
  const batches: P[][] = [];
  let current: P[] = [];
  for (const item of items) {
    current.push(item);
    if (current.length === MAX_BATCH || (transactionOpen && mayWait(item.text))) {
      batches.push(current);
      current = [];
    }
  }
  if (current.length) batches.push(current);
  return batches;
}

/**
 * One batch on one connection, the kept one when there is one (./kept-connection.ts: no pg-pool
 * checkout), else the pool's (its callback form: no promise). The driver's callback forms
 * throughout (pg's `Client.query` makes a promise only when given no callback).
 */
function send(checkouts: Checkouts, Query: StatementClass, batch: Pending[]): void {
  const held = checkouts.take();
  if (held) {
    sendOn(checkouts, held, Query, batch);
    return;
  }
  checkouts.connect((error, connection) => {
    if (error || !connection) {
      for (const item of batch) item.answer(error ?? new Error('no connection'));
      return;
    }
    sendOn(checkouts, connection, Query, batch);
  });
}

/**
 * The batch's statements in one write; the connection goes back once every one has answered. A
 * statement alone whose answer is an error gives its connection back to be ended (as pg-pool's
 * `pool.query` did for any failure).
 */
function sendOn(checkouts: Checkouts, held: Held, Query: StatementClass, batch: Pending[]): void {
  if (batch.length === 1) {
    const [item] = batch;
    submitOn(held.connection, Query, item.text, item.params, (error, result) => {
      checkouts.give(held, Boolean(error));
      item.answer(error, result);
    });
    return;
  }
  let unanswered = batch.length;
  const answered = () => {
    if (--unanswered === 0) checkouts.give(held);
  };
  writeTogether(held.connection, Query, batch, answered);
}

/**
 * `statements` on `connection` in one socket write (corked), in order, each answered once by
 * callback and then `answered` (the pool's batches and a transaction's statement with the control
 * statements before it, ./lazy-transaction.ts).
 */
export function writeTogether(
  connection: PoolClient,
  Query: StatementClass,
  statements: Statement[],
  answered?: () => void,
): void {
  const stream = (connection as unknown as { connection?: { stream?: Corkable } }).connection?.stream;
  stream?.cork?.();
  try {
    for (const { text, params, answer } of statements) {
      let called = false;
      submitOn(connection, Query, text, params, (error, result) => {
        if (called) return;
        called = true;
        answer(error, result);
        answered?.();
      });
    }
  } finally {
    stream?.uncork?.();
  }
}

/**
 * One statement on `connection`, answered by callback (pg makes no promise then); a refusal at
 * once is its answer. Without `params`, the simple query protocol (BEGIN, COMMIT).
 */
export function submitOn(
  connection: PoolClient,
  Query: StatementClass,
  text: string,
  params: unknown[] | undefined,
  answer: Answer,
): void {
  try {
    (connection as unknown as QueryTarget).query(new Query(text, params), answer);
  } catch (error) {
    answer(error as Error);
  }
}

type Corkable = { cork?(): void; uncork?(): void };
/** pg's `query(query, callback)` form for a Query object (pg's types list it without the callback). */
type QueryTarget = { query(query: unknown, answer: Answer): void };
