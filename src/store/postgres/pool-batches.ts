/**
 * Statements on the pool outside any transaction (issue 18, item 6), sent in batches: those asked
 * for during one turn of the event loop (until its check phase, `setImmediate`) go out together on
 * one connection, in one socket write, answered in order (pg's pipeline mode; each keeps its own
 * Sync, so each is still its own transaction and an error ends only its own statement). On this
 * VM a socket write is most of a statement's cost in svc (docs/performance.md): at many requests
 * at once, several statements fall in one turn.
 *
 * What changes for a statement: it may wait for those ahead of it on its connection. So reads
 * (plain SELECTs, which never wait for a lock) go first; a statement that may wait for a lock (any
 * write, a function call, a row lock) is last, and while a transaction of this process is open it
 * is alone with the reads: a transaction holding a lock and waiting for a statement of this pool
 * must not find that statement queued behind one waiting for its lock. Statements of one batch
 * come from independent callers (a caller awaits its statement before the next), whose statements
 * had no order between them before either (each took a connection of its own).
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
 * connection now (then a statement that may wait for a lock does not share a connection with
 * another such statement).
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

/** The batches of one turn: reads first, then the statements that may wait (see the module's notes). */
export function batchesOf<P extends { text: string }>(items: P[], transactionOpen: boolean): P[][] {
  const reads = items.filter((item) => !mayWait(item.text));
  const waits = items.filter((item) => mayWait(item.text));
  const batches: P[][] = [];
  const take = (list: P[]) => {
    for (let at = 0; at < list.length; at += MAX_BATCH) batches.push(list.slice(at, at + MAX_BATCH));
  };
  if (!transactionOpen) {
    take([...reads, ...waits]);
    return batches;
  }
  // Each waiting statement alone behind the reads (the first one), or alone.
  const [first, ...rest] = waits;
  take(first ? [...reads, first] : reads);
  for (const item of rest) batches.push([item]);
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
