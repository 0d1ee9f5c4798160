/**
 * `SqlClient.outside` (issue 18 item 6, p-pgscope): work started inside a transaction's body but
 * outside its transaction (a lone compat start's run, prepared during its statement's round trip)
 * sends its statements on the pool, each its own, for as long as it runs: it neither joins the
 * body's transaction (no BEGIN/COMMIT there for it, nothing of it rolled back with it) nor waits for
 * its end; its own `transaction` is a new one. The body's own statements still join.
 */
import { describe, expect, it } from 'vitest';
import { createPostgresClient } from '../../src/store/postgres/client';
import { postgresTransactions } from '../../src/store/transactions';
import { postgresForFile } from '../helpers/postgres';

const pg = postgresForFile();

describe.skipIf(!pg.available)('PostgreSQL: work outside the transaction it was started in', () => {
  it('STORE-PG-907: statements under `outside` go to the pool while the body’s transaction is open and after it: they do not see its rows, are not rolled back with it, and their transaction is their own', async () => {
    const db = await createPostgresClient({
      url: await pg.cluster().createDatabase(),
      pool_size: 3,
      statement_timeout_ms: 30_000,
      connect_timeout_ms: 2_000,
    });
    const outside = postgresTransactions(db).outside;
    try {
      await db.run('CREATE TABLE t (id BIGINT PRIMARY KEY)');
      let release!: () => void;
      const held = new Promise<void>((resolve) => {
        release = resolve;
      });
      const seen: { inTransaction: boolean; rows: number }[] = [];
      let work: Promise<void> | undefined;
      await expect(
        db.transaction(async () => {
          await db.run('INSERT INTO t VALUES (1)');
          // Started here and not awaited, as a run launched by the body is.
          work = outside!(async () => {
            const count = async () =>
              seen.push({
                inTransaction: db.inTransaction(),
                rows: Number((await db.one<{ n: number }>('SELECT count(*) AS n FROM t'))!.n),
              });
            await count(); // the body's row is not committed: not seen from the pool
            await db.transaction(async () => {
              await db.run('INSERT INTO t VALUES (2)');
            });
            await held;
            await count(); // after the body rolled back: its own row only
          });
          // The body's statements after it still join its transaction: they see its own
          // uncommitted row (the work's row 2 may have committed meanwhile; read committed shows it).
          expect(db.inTransaction()).toBe(true);
          expect(await db.one<{ n: number }>('SELECT count(*) AS n FROM t WHERE id = 1')).toEqual({ n: 1 });
          // Neither waits for the other: the work's first read and its transaction answered while
          // this transaction is open.
          while (seen.length === 0 || !(await db.autocommit.one('SELECT 1 FROM t WHERE id = 2')))
            await new Promise((resolve) => setTimeout(resolve, 5));
          throw new Error('roll back');
        }),
      ).rejects.toThrow('roll back');
      release();
      await work;
      expect(seen).toEqual([
        { inTransaction: false, rows: 0 },
        { inTransaction: false, rows: 1 },
      ]);
      expect(await db.query('SELECT id FROM t ORDER BY id')).toEqual([{ id: 2 }]);
      // With no transaction open: `fn` as it is.
      expect(await outside!(() => db.one('SELECT 3 AS n'))).toEqual({ n: 3 });
    } finally {
      await db.close();
    }
  });
});
