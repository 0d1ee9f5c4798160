/**
 * The PostgreSQL client's ambient transaction ends with its body (issue 18): work a body starts
 * and does not await (the agent starting a run inside `send`'s transaction, a timer) joins the
 * transaction only while the body runs; after it, that work's statements go to the pool and its
 * own transaction is a new one, as `atomicallyAsync` on SQLite. Such work always sees the
 * writes of the transaction that started it: it joins the nearest scope still open, or waits for
 * the COMMIT (on SQLite's one connection it sees them at once).
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { createPostgresClient } from '../../src/store/postgres/client';
import { postgresTransactions } from '../../src/store/transactions';
import { postgresForFile } from '../helpers/postgres';

const pg = postgresForFile();

/** A client on a new database with one table `t (id)`. */
async function tableT() {
  const db = await createPostgresClient({
    url: await pg.cluster().createDatabase(),
    pool_size: 4,
    statement_timeout_ms: 30_000,
    connect_timeout_ms: 2_000,
  });
  await db.run('CREATE TABLE t (id BIGINT PRIMARY KEY)');
  return db;
}

describe.skipIf(!pg.available)('the ambient transaction ends with its body', () => {
  it('STORE-PG-agent: work a transaction body started runs on the pool after it, in transactions of its own', async () => {
    const db = await tableT();
    try {
      const transactions = postgresTransactions(db);
      let later: Promise<unknown> = Promise.resolve();
      const seen: boolean[] = [];
      await transactions.run(async () => {
        await db.run('INSERT INTO t VALUES (1)');
        // Started inside the body, not awaited: it goes on after the commit (a run the body starts).
        later = (async () => {
          seen.push(db.inTransaction());
          await sleep(50);
          seen.push(db.inTransaction());
          await db.run('INSERT INTO t VALUES (2)');
          await transactions.run(async () => {
            seen.push(db.inTransaction());
            await db.run('INSERT INTO t VALUES (3)');
          });
          await db.run('INSERT INTO t VALUES (4)');
        })();
      });
      await later;
      expect(seen).toEqual([true, false, true]);
      expect(db.inTransaction()).toBe(false);
      expect((await db.query<{ id: number }>('SELECT id FROM t ORDER BY id')).map((r) => r.id)).toEqual([
        1, 2, 3, 4,
      ]);
    } finally {
      await db.close();
    }
  });
  it('STORE-PG-agent: work that outlives its transaction sees its writes: it waits for the COMMIT, or joins the scope still open', async () => {
    const db = await tableT();
    try {
      const transactions = postgresTransactions(db);
      const count = async () => (await db.one<{ n: number }>('SELECT count(*) AS n FROM t'))!.n;
      // The body ends while a savepoint it began is still running, so the COMMIT comes ~150 ms
      // after the body; work it started reads in between.
      let reader: Promise<number> = Promise.resolve(-1);
      await transactions.run(async () => {
        await db.run('INSERT INTO t VALUES (1)');
        void transactions.run(async () => {
          await sleep(150);
        });
        reader = (async () => {
          await sleep(30);
          return count();
        })();
      });
      expect(await reader).toBe(1);
      // Work started in a savepoint that has ended, while its transaction still runs, joins the
      // transaction and sees its uncommitted rows.
      let inner: Promise<number> = Promise.resolve(-1);
      await transactions.run(async () => {
        await transactions.run(async () => {
          await db.run('INSERT INTO t VALUES (2)');
          inner = (async () => {
            await sleep(30);
            return count();
          })();
        });
        await sleep(100);
      });
      expect(await inner).toBe(2);
    } finally {
      await db.close();
    }
  });
});
