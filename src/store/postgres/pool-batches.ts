/**
 * Statements on the pool outside any transaction (issue 18, item 6), sent in batches: those asked
 * for during one turn of the event loop (until its check phase, `setImmediate`) go out together on
 * one connection, in one socket write, answered in order (pg's pipeline mode; each keeps its own
 * Sync, so each is still its own transaction and an error ends only its own statement). On this
 * VM a socket write is most of a statement's cost in svc (docs/performance.md): at many requests
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
import type { Pool, PoolClient, QueryResult, QueryResultRow } from 'pg';

/** What the client's executor sends statements to: a connection, or these batches. */
export interface Queryable {
  query<T extends QueryResultRow>(text: string, params: unknown[]): Promise<QueryResult<T>>;
}

interface Pending {
  text: string;
  params: unknown[];
  resolve: (result: QueryResult) => void;
  reject: (error: unknown) => void;
}

/** Most statements in one write. */
const MAX_BATCH = 32;

/**
 * The pool's statements in batches. `transactionOpen`: a transaction of this process holds a
 * connection now (then a statement that may wait for a lock ends its batch).
 */
export function pooledBatches(pool: Pool, transactionOpen: () => boolean): Queryable {
  let queued: Pending[] = [];
  let scheduled = false;
  const flush = () => {
    scheduled = false;
    const items = queued;
    queued = [];
    for (const batch of batchesOf(items, transactionOpen())) send(pool, batch);
  };
  return {
    query: <T extends QueryResultRow>(text: string, params: unknown[]) =>
      new Promise<QueryResult<T>>((resolve, reject) => {
        queued.push({ text, params, resolve: resolve as Pending['resolve'], reject });
        if (!scheduled) {
          scheduled = true;
          setImmediate(flush);
        }
      }),
  };
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

/** One batch: alone, as before (`pool.query`); else on one connection, one write. */
function send(pool: Pool, batch: Pending[]): void {
  if (batch.length === 1) {
    const [item] = batch;
    pool.query(item.text, item.params).then(item.resolve, item.reject);
    return;
  }
  void sendTogether(pool, batch);
}

async function sendTogether(pool: Pool, batch: Pending[]): Promise<void> {
  let connection: PoolClient;
  try {
    connection = await pool.connect();
  } catch (error) {
    for (const item of batch) item.reject(error);
    return;
  }
  let broken = false;
  // A connection the server drops emits 'error'; the statements in flight fail with it anyway.
  const dropped = () => {
    broken = true;
  };
  connection.on('error', dropped);
  const stream = (connection as unknown as { connection?: { stream?: Corkable } }).connection?.stream;
  const answers: Promise<unknown>[] = [];
  stream?.cork?.();
  try {
    for (const item of batch) {
      let answer: Promise<QueryResult>;
      try {
        answer = connection.query(item.text, item.params);
      } catch (error) {
        answer = Promise.reject(error);
      }
      answer.then(item.resolve, item.reject);
      answers.push(answer);
    }
  } finally {
    stream?.uncork?.();
  }
  await Promise.allSettled(answers);
  connection.off('error', dropped);
  connection.release(broken);
}

type Corkable = { cork?(): void; uncork?(): void };
