/**
 * The PostgreSQL connection (issue 18): a pool built from `[store]` (size, statement timeout,
 * connect timeout) behind a small async `SqlClient`. The `pg` driver is loaded here with a dynamic
 * import, so the SQLite path (every process without a postgres URL) never loads it. BIGINT
 * columns (epoch ms, counters, identities) read as numbers, as they do from SQLite.
 * @module
 */
import type { Client, Pool, PoolConfig, QueryResult, QueryResultRow } from 'pg';
import type { StoreConfig } from '../../config/schema';
import { type ScopedStorage, scopedStorage } from '../async-scope';
import type { TransactionEnd } from '../read-scope';
import { redactStoreUrl, type StoreTarget, storeTarget } from '../store-url';
import { serverAnswered, storeError } from './errors';
import { checkoutsOf, connectHeld } from './kept-connection';
import { lazyTransaction } from './lazy-transaction';
import { againIfStale, pooledBatches, type Submit } from './pool-batches';
import { preparedNamesOf } from './prepared-names';
import { statementClass, type TypeParsers } from './row-shapes';
import type { SqlExecutor } from './sql-executor';
import { aloneSubmit, callAfter, type TransactionRoot, transactionRoot } from './transaction-root';

export type { SqlExecutor };

export interface SqlClient extends SqlExecutor {
  /**
   * `fn` runs on one checked-out connection between BEGIN and COMMIT (ROLLBACK when it throws).
   * The transaction is ambient for the body's async context: the client's own `query`, `one` and
   * `run` called anywhere inside `fn` (a repository that only holds the client) run on the
   * transaction's connection, and a nested `transaction` is a savepoint of it. So a service can
   * make several repositories' writes one transaction without passing `tx` through them. Work
   * the body starts and does not await (a run it starts, a timer) joins the transaction only
   * while the body runs: once it has ended, that work's statements join the nearest enclosing
   * scope still open, or, when the whole transaction has ended, go to the pool after its COMMIT
   * (or ROLLBACK), and its own `transaction` is a new one (as `atomicallyAsync` on SQLite). So
   * such work always sees the writes of the transaction that started it, as on SQLite's one
   * connection: a run started in a transaction never reads before its session is committed.
   */
  transaction<T>(fn: (tx: SqlExecutor) => Promise<T>): Promise<T>;
  /**
   * `fn` in the open transaction of this context with no savepoint of its own; outside one,
   * `transaction(fn)`. For a body whose failure the caller lets end the whole transaction (the
   * compat start's send): a savepoint there protects nothing and costs two statements (SAVEPOINT,
   * RELEASE). A failure caught instead leaves the transaction aborted: its COMMIT then throws.
   */
  joined<T>(fn: (tx: SqlExecutor) => Promise<T>): Promise<T>;
  /** True inside a `transaction` body of this client. */
  inTransaction(): boolean;
  /**
   * `fn` once the transaction of this async context has ended (COMMIT or ROLLBACK sent); never
   * outside one (a statement there was its own transaction, already ended).
   */
  afterTransaction(fn: () => void): void;
  /**
   * The transaction of this async context while it has not ended: a statement sent now is part of
   * it (or, once its body has ended, waits for its end); one that just answered was part of it.
   * For copies of rows (../read-scope.ts): what it wrote and read stays valid after a COMMIT.
   */
  transactionNow(): TransactionEnd | undefined;
  /**
   * Statements on the pool, each its own transaction, never joining (nor waiting for) an ambient
   * one: for what other nodes must see at once whatever the caller is in (a node's heartbeat).
   */
  readonly autocommit: SqlExecutor;
  /**
   * `fn` and the work it starts with no transaction of this context: statements on the pool, as
   * `autocommit`'s, for as long as that work runs (a lone start's early run, p-pgscope).
   */
  outside<T>(fn: () => T): T;
  /**
   * As the client's own `query`, `one` and `run`, except for a statement that would be the first
   * of this context's transaction (none sent in it yet, no savepoint): it goes without BEGIN, its
   * own transaction, committed by itself; the transaction's later statements begin it, and one
   * with nothing after sends neither BEGIN nor COMMIT (p-pgstart2: a new compat session's start,
   * one statement that writes everything it needs). Only for a statement whose writes need
   * nothing else of the transaction to stand: a failure after it does not roll it back.
   */
  readonly alone?: SqlExecutor;
  /** Whether a statement sent now through `alone` goes alone (committed at its answer, p-pgstart4). */
  aloneNow?(): boolean;
  /** Host, port, database and user (for messages). */
  readonly target: StoreTarget;
  /** The URL with its password masked. */
  readonly redactedUrl: string;
  /**
   * A new connection outside the pool, with the pool's URL, connect timeout and type parsers, not
   * yet connected: for a session of its own (the event listener's LISTEN). The caller ends it.
   */
  dedicated(applicationName: string): Client;
  /**
   * Whether `pid` is the server process of one of this pool's connections now: a notification
   * it sent reports a write of this process (./table-changes.ts, kept session rows).
   */
  ownsBackend?(pid: number): boolean;
  /**
   * `fn` whenever one of the pool's connections goes away (an error, an idle timeout, the end):
   * a write it had in flight may have committed without this process hearing its answer.
   */
  onConnectionGone?(fn: () => void): void;
  close(): Promise<void>;
}

export type PostgresOptions = Pick<
  StoreConfig,
  'pool_size' | 'statement_timeout_ms' | 'connect_timeout_ms'
> & {
  url: string;
};

const INT8_OID = 20;
const NUMERIC_OID = 1700;
/** BIGINT and NUMERIC: one function for every column (pg asked for a parser per column per statement). */
const toNumber = (value: string) => Number(value);

/**
 * A pool for the URL; nothing connects until the first statement (or `connect()` below). Errors
 * become `SvcError`s naming host, port and database with the password masked (./errors.ts).
 */
export async function createPostgresClient(options: PostgresOptions): Promise<SqlClient> {
  const pg = await import('pg');
  const driver = pg.default ?? pg;
  const target = storeTarget(options.url);
  const redactedUrl = redactStoreUrl(options.url);
  const fail = (error: unknown) => storeError(error, { target, redactedUrl, url: options.url });
  const config = poolConfig(options, driver.types);
  const pool: Pool = new driver.Pool(config);
  // svc's statements: pg's Query, rows by a shape kept per text, a text sent again named (./prepared-names.ts).
  const Query = statementClass(driver.Query, config.types as TypeParsers, preparedNamesOf(process.env));
  // An idle connection the server drops must not take the process down; the next query reports it.
  pool.on('error', () => {});
  const backends = poolBackends(pool);
  // One connection kept between uses while nothing waits for the pool (./kept-connection.ts).
  const checkouts = checkoutsOf(pool);

  const executor = (submit: Submit) => executorOf(submit, fail);
  /** This process's transactions holding a connection now (./pool-batches.ts: when writes may share one). */
  let openTransactions = 0;

  // Its promise hooks are on only while a transaction is open (../async-scope.ts): a permanent
  // AsyncLocalStorage would put every promise of the process through them.
  const ambient = scopedStorage<Scope>();
  // Statements outside a transaction: those of one turn of the event loop go out together.
  const pooled = executor(againIfStale(pooledBatches(checkouts, Query, () => openTransactions > 0)));
  /** The innermost scope of this context still open (a savepoint's body, else its transaction's). */
  const joined = (): Scope | undefined => {
    for (let scope = ambient.getStore(); scope; scope = scope.parent) if (scope.open) return scope;
    return undefined;
  };
  /** Work that outlived its whole transaction: the transaction's end, to wait for. */
  const ended = (): Promise<void> | undefined => {
    const store = ambient.getStore();
    return store && !joined() ? store.root.done : undefined;
  };
  // Where this context's statements go, decided without a promise: its open scope's transaction,
  // else the pool (once the transaction it outlived has ended: a promise to wait for).
  const routed = routedExecutor(
    () => (ambient.open === 0 ? pooled : (joined()?.tx ?? ended() ?? pooled)),
    pooled,
  );

  const client: SqlClient = {
    query: routed.query,
    one: routed.one,
    run: routed.run,
    target,
    redactedUrl,
    inTransaction: () => joined() !== undefined,
    afterTransaction(fn) {
      const root = ambient.getStore()?.root;
      // Called at the end without a promise each; a transaction already ended calls it next.
      if (root) root.after ? root.after.push(fn) : queueMicrotask(fn);
    },
    transactionNow() {
      const root = ambient.getStore()?.root;
      return root?.after ? root.end : undefined;
    },
    autocommit: pooled,
    outside: (fn) => ambient.exit(fn),
    alone: routedExecutor(() => {
      if (ambient.open === 0) return pooled;
      const scope = joined();
      return (scope && !scope.parent ? scope.root.alone : scope?.tx) ?? ended() ?? pooled;
    }, pooled),
    aloneNow() {
      const scope = ambient.open === 0 ? undefined : joined();
      return scope ? !scope.parent && scope.root.control.fresh() : ambient.open === 0 || !ended();
    },
    ownsBackend: backends.owns,
    onConnectionGone: backends.onGone,
    dedicated: (applicationName) =>
      new driver.Client({
        connectionString: options.url,
        connectionTimeoutMillis: options.connect_timeout_ms,
        application_name: applicationName,
        types: config.types,
      }),
    async joined(fn) {
      const scope = joined();
      return scope ? await fn(scope.tx) : await client.transaction(fn);
    },
    async transaction(fn) {
      const outer = joined();
      if (outer) return inSavepoint(ambient, outer, fn);
      const end = ended();
      if (end) await end;
      // The kept connection, else the pool's. A connection the server drops (a restart, a kill)
      // emits 'error' between statements: `Held`'s listener marks it broken (the statement in flight
      // fails anyway); it is not given back to be used again.
      const held = checkouts.take() ?? (await connectHeld(checkouts, fail));
      openTransactions++;
      const lazy = lazyTransaction(held.connection, Query);
      const tx = executor(lazy.send);
      let finished!: () => void;
      const done = new Promise<void>((resolve) => {
        finished = resolve;
      });
      const scope: Scope = {
        root: transactionRoot(tx, done, lazy.control, (root) => executor(aloneSubmit(lazy, root))),
        tx,
        open: true,
        chain: Promise.resolve(),
        nested: new Set(),
      };
      // The whole transaction, its COMMIT or ROLLBACK included, inside the scope: work the body
      // started and did not await sees the scope (and waits for its end) until then, and no
      // scope (so goes to the pool, after the end) once the storage is off again.
      const whole = async () => {
        let committing = false;
        try {
          let result: Awaited<ReturnType<typeof fn>>;
          try {
            result = await fn(tx);
          } finally {
            await settle(scope);
          }
          committing = true;
          await lazy.end('COMMIT');
          return result;
        } catch (error) {
          scope.root.kept = false;
          // Known rolled back: it failed before its COMMIT, or the server refused the COMMIT, and no
          // statement of it went alone (which committed). A COMMIT whose answer was lost with the
          // connection may have committed: not known.
          scope.root.rolledBack = !scope.root.wroteAlone && (!committing || serverAnswered(error));
          try {
            await lazy.end('ROLLBACK');
          } catch {
            held.broken = true; // the connection is gone: do not hand it back to the pool
          }
          throw fail(error);
        }
      };
      try {
        return await ambient.run(scope, whole);
      } finally {
        openTransactions--;
        checkouts.give(held);
        callAfter(scope.root);
        finished();
      }
    },
    async close() {
      checkouts.close();
      await pool.end();
    },
  };
  return client;
}

/**
 * The server processes of the pool's connections (`ownsBackend`), known from their connect on, and
 * who to tell when one goes away (`onConnectionGone`).
 */
function poolBackends(pool: Pool): { owns(pid: number): boolean; onGone(fn: () => void): void } {
  const pids = new Set<number>();
  const gone = new Set<() => void>();
  const pidOf = (connection: unknown) => (connection as { processID?: number | null }).processID;
  pool.on('connect', (connection) => {
    const pid = pidOf(connection);
    if (typeof pid === 'number') pids.add(pid);
  });
  pool.on('remove', (connection) => {
    const pid = pidOf(connection);
    if (typeof pid === 'number') pids.delete(pid);
    for (const fn of gone) fn();
  });
  return {
    owns: (pid) => pids.has(pid),
    onGone: (fn) => {
      gone.add(fn);
    },
  };
}

/** The pool's settings: `[store]`'s, pipelining, and BIGINT and NUMERIC read as numbers (as from SQLite). */
function poolConfig(options: PostgresOptions, types: typeof import('pg').types): PoolConfig {
  return {
    connectionString: options.url,
    max: options.pool_size,
    connectionTimeoutMillis: options.connect_timeout_ms,
    statement_timeout: options.statement_timeout_ms > 0 ? options.statement_timeout_ms : undefined,
    application_name: 'svc',
    // Queries written before the previous one answered: a transaction's BEGIN goes out with its
    // first statement (`lazyTransaction`); everything else is sent one at a time as before.
    pipeline: true,
    types: {
      getTypeParser: ((oid: number, format?: 'text' | 'binary') => {
        if (oid === INT8_OID || oid === NUMERIC_OID) return toNumber;
        return format === 'binary' ? types.getTypeParser(oid, 'binary') : types.getTypeParser(oid, 'text');
      }) as typeof types.getTypeParser,
    },
  };
}

/**
 * The client's own `query`, `one` and `run`: on the executor `current()` names (a transaction's,
 * the pool), or on the pool once the transaction end it answers has come. No promise of its own.
 */
function routedExecutor(current: () => SqlExecutor | Promise<void>, pooled: SqlExecutor): SqlExecutor {
  const on = <R>(call: (executor: SqlExecutor) => Promise<R>): Promise<R> => {
    const executor = current();
    return executor instanceof Promise ? executor.then(() => call(pooled)) : call(executor);
  };
  return {
    query: <T extends QueryResultRow>(text: string, params?: readonly unknown[]) =>
      on((executor) => executor.query<T>(text, params)),
    one: <T extends QueryResultRow>(text: string, params?: readonly unknown[]) =>
      on((executor) => executor.one<T>(text, params)),
    run: (text: string, params?: readonly unknown[]) => on((executor) => executor.run(text, params)),
  };
}

/**
 * The statements `submit` sends, one promise each (the driver answers by callback, ./pool-batches.ts):
 * ≈ 20 promises a statement went through the layers before (docs/performance-log.md, 2026-11-30).
 * On a checked-out connection `submit` writes each statement at its call (the lazy transaction's
 * `send`): statements a transaction's body starts without awaiting each (concurrent repository
 * calls, work it started) are sent in call order, as pg queued them, without asking pg to queue
 * (deprecated: "client.query() when the client is already executing a query").
 */
function executorOf(submit: Submit, fail: (error: unknown) => unknown): SqlExecutor {
  const send = <R>(text: string, params: readonly unknown[], pick: (result: QueryResult) => R): Promise<R> =>
    new Promise<R>((resolve, reject) => {
      // pg reads the parameters and keeps them on its Query only while it is sent: no copy.
      submit(text, params as unknown[], (error, result) => {
        if (error || !result) reject(fail(error));
        else resolve(pick(result));
      });
    });
  return {
    query: <T extends QueryResultRow>(text: string, params: readonly unknown[] = []) =>
      send(text, params, (result) => result.rows as T[]),
    one: <T extends QueryResultRow>(text: string, params: readonly unknown[] = []) =>
      send(text, params, (result) => result.rows[0] as T | undefined),
    run: (text: string, params: readonly unknown[] = []) =>
      send(text, params, (result) => result.rowCount ?? 0),
  };
}

/**
 * A scope is a transaction's body or a savepoint's. `open`: the body is running; work it started
 * that outlives it must not use the connection. `nested`: savepoints begun in it while it was
 * open; it ends (RELEASE, COMMIT) only after them, so a nested transaction the body started and
 * did not await still runs inside it, as on SQLite, and nothing new joins after. `chain`: its
 * savepoints run one after another (savepoints are a stack on the one connection: two siblings
 * interleaved would release or roll back each other).
 */
type Scope = {
  /** The transaction: its connection, its savepoint counter, its end (COMMIT or ROLLBACK done). */
  root: TransactionRoot;
  /** The scope this savepoint was begun in (none for the transaction's own). */
  parent?: Scope;
  tx: SqlExecutor;
  open: boolean;
  chain: Promise<unknown>;
  nested: Set<Promise<unknown>>;
};

async function settle(scope: Scope): Promise<void> {
  scope.open = false;
  while (scope.nested.size) await Promise.allSettled([...scope.nested]);
}

/** A nested transaction: a savepoint of the scope's transaction, after its earlier siblings. */
async function inSavepoint<T>(
  ambient: ScopedStorage<Scope>,
  outer: Scope,
  fn: (tx: SqlExecutor) => Promise<T>,
): Promise<T> {
  const { root } = outer;
  const scope: Scope = {
    root,
    parent: outer,
    tx: root.tx,
    open: true,
    chain: Promise.resolve(),
    nested: new Set(),
  };
  const before = outer.chain;
  const nested = (async () => {
    await before.catch(() => {});
    const savepoint = `svc_sp_${++root.savepoints}`;
    root.control.savepoint(savepoint);
    try {
      let result: T;
      try {
        result = await ambient.run(scope, () => fn(root.tx));
      } finally {
        await settle(scope);
      }
      root.control.release(savepoint);
      return result;
    } catch (error) {
      root.control.rollbackTo(savepoint);
      root.kept = false;
      throw error;
    }
  })();
  outer.chain = nested;
  outer.nested.add(nested);
  try {
    return await nested;
  } finally {
    outer.nested.delete(nested);
  }
}
