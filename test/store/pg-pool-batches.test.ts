/**
 * Statements outside a transaction on PostgreSQL (issue 18, item 6): those asked for in one turn
 * of the event loop go out on one connection in one socket write (src/store/postgres/pool-batches.ts),
 * each still its own transaction with its own answer and its own error, in call order; while a
 * transaction of this process is open a statement that may wait for a lock never has another
 * statement queued behind it.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createPostgresClient, type SqlClient } from '../../src/store/postgres/client';
import { batchesOf, mayWait } from '../../src/store/postgres/pool-batches';
import { postgresForFile } from '../helpers/postgres';
import { writesDuring } from '../helpers/socket-writes';

const pg = postgresForFile();

async function client(statementTimeoutMs = 30_000): Promise<SqlClient> {
  return createPostgresClient({
    url: await pg.cluster().createDatabase(),
    pool_size: 4,
    statement_timeout_ms: statementTimeoutMs,
    connect_timeout_ms: 2_000,
  });
}

/** Opens every connection of the pool once, so the writes counted are statements only. */
async function warm(db: SqlClient): Promise<void> {
  await Promise.all([1, 2, 3, 4].map(() => db.transaction(async () => db.one('SELECT pg_sleep(0.05)'))));
}

afterEach(() => {
  vi.restoreAllMocks();
});

describe('PostgreSQL pool batches: what may share a connection', () => {
  it('STORE-PG-81: one batch in call order; with a transaction open, a statement that may wait for a lock ends its batch', () => {
    const items = [
      'SELECT 1',
      'UPDATE t SET v = 1',
      'SELECT * FROM svc_f($1)',
      'SELECT 2',
      'SELECT 3',
      'INSERT INTO t VALUES (1)',
      'SELECT 4',
    ].map((text) => ({ text }));
    const texts = (batches: { text: string }[][]) => batches.map((b) => b.map((i) => i.text));
    expect(texts(batchesOf(items, false))).toEqual([items.map((i) => i.text)]);
    expect(texts(batchesOf(items, true))).toEqual([
      ['SELECT 1', 'UPDATE t SET v = 1'],
      ['SELECT * FROM svc_f($1)'],
      ['SELECT 2', 'SELECT 3', 'INSERT INTO t VALUES (1)'],
      ['SELECT 4'],
    ]);
    expect(
      batchesOf(
        Array.from({ length: 70 }, () => ({ text: 'SELECT 1' })),
        false,
      ).map((b) => b.length),
    ).toEqual([32, 32, 6]);
    expect(mayWait('SELECT * FROM t WHERE id = $1')).toBe(false);
    expect(mayWait('SELECT * FROM t WHERE id = $1 FOR UPDATE')).toBe(true);
    expect(mayWait('WITH r AS (UPDATE t SET v = 1 RETURNING *) SELECT * FROM r')).toBe(true);
    expect(mayWait('SELECT pg_advisory_lock($1)')).toBe(true);
  });
});

describe.skipIf(!pg.available)('PostgreSQL pool batches', () => {
  it('STORE-PG-82: statements of one turn go out in one write, each with its own answer, its own error and its own commit', async () => {
    const db = await client();
    try {
      await db.run('CREATE TABLE t (id BIGINT PRIMARY KEY, v TEXT)');
      await db.run("INSERT INTO t VALUES (1, 'one')");
      await warm(db);
      let answers: PromiseSettledResult<unknown>[] = [];
      const writes = await writesDuring(async () => {
        answers = await Promise.allSettled([
          db.one<{ v: string }>('SELECT v FROM t WHERE id = $1', [1]),
          db.run('INSERT INTO t VALUES ($1, $2)', [2, 'two']),
          db.run('INSERT INTO t VALUES ($1, $2)', [1, 'again']), // duplicate key: fails alone
          db.run('INSERT INTO t VALUES ($1, $2)', [3, 'three']),
          db.query<{ n: number }>('SELECT count(*) AS n FROM t'),
          db.run('UPDATE t SET v = $1 WHERE id = $2', ['uno', 1]),
        ]);
      });
      // Six statements sent one at a time: six writes; together: one.
      expect(writes).toBe(1);
      expect(answers.map((a) => a.status)).toEqual([
        'fulfilled',
        'fulfilled',
        'rejected',
        'fulfilled',
        'fulfilled',
        'fulfilled',
      ]);
      expect((answers[0] as PromiseFulfilledResult<{ v: string }>).value.v).toBe('one');
      expect((answers[1] as PromiseFulfilledResult<number>).value).toBe(1);
      // In call order on one connection: the count after the two inserts before it.
      expect((answers[4] as PromiseFulfilledResult<{ n: number }[]>).value[0].n).toBe(3);
      expect(String((answers[2] as PromiseRejectedResult).reason)).toMatch(/duplicate key/);
      expect(await db.query('SELECT id, v FROM t ORDER BY id')).toEqual([
        { id: 1, v: 'uno' },
        { id: 2, v: 'two' },
        { id: 3, v: 'three' },
      ]);
      // The connection is clean afterwards: a transaction and a statement alone still work.
      await db.transaction(async () => db.run("INSERT INTO t VALUES (4, 'four')"));
      expect((await db.one<{ n: number }>('SELECT count(*) AS n FROM t'))?.n).toBe(4);
    } finally {
      await db.close();
    }
  });

  it('STORE-PG-83: a transaction holding a lock and waiting for a statement of the pool is not stuck behind one waiting for its lock', async () => {
    // A 20 s statement timeout: were the statements queued behind the one waiting for the lock,
    // they would wait until it timed out (and fail) instead of finishing at once (in well under
    // the bound below, which leaves a loaded box seconds).
    const db = await client(20_000);
    try {
      await db.run('CREATE TABLE t (id BIGINT PRIMARY KEY, v BIGINT)');
      await db.run('INSERT INTO t VALUES (1, 0), (2, 0)');
      await warm(db);
      const started = Date.now();
      let blocked: Promise<number> | undefined;
      await db.transaction(async () => {
        await db.run('UPDATE t SET v = v + 1 WHERE id = 1'); // row 1 locked until the COMMIT
        // Work outside the transaction (started by other callers, in one turn): a write waiting
        // for row 1, then a read and a write the transaction waits for.
        let other: Promise<number> | undefined;
        let read: Promise<unknown> | undefined;
        await new Promise<void>((resolve) =>
          setImmediate(() => {
            blocked = db.autocommit.run('UPDATE t SET v = v + 10 WHERE id = 1');
            read = db.autocommit.one('SELECT v FROM t WHERE id = 2');
            other = db.autocommit.run('UPDATE t SET v = v + 100 WHERE id = 2');
            resolve();
          }),
        );
        await Promise.all([other, read]);
      });
      expect(await blocked).toBe(1);
      expect(Date.now() - started).toBeLessThan(15_000);
      expect(await db.query('SELECT id, v FROM t ORDER BY id')).toEqual([
        { id: 1, v: 11 },
        { id: 2, v: 100 },
      ]);
    } finally {
      await db.close();
    }
  });
});
