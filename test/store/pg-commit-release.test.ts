/**
 * A savepoint released right before its transaction's COMMIT on PostgreSQL
 * (src/store/postgres/lazy-transaction.ts, p-pgprep): the RELEASE that would go out with the
 * COMMIT is dropped (the COMMIT releases it: a compat start's ledger savepoint, one statement
 * fewer), its writes commit; a RELEASE followed by another statement and a ROLLBACK TO still go
 * out; an aborted transaction is still never reported committed.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { createPostgresClient, type SqlClient } from '../../src/store/postgres/client';
import { driverStatements, postgresForFile } from '../helpers/postgres';

const pg = postgresForFile();

let restore = () => {};
afterEach(() => restore());

async function client(): Promise<SqlClient> {
  const db = await createPostgresClient({
    url: await pg.cluster().createDatabase(),
    pool_size: 2,
    statement_timeout_ms: 30_000,
    connect_timeout_ms: 5_000,
  });
  await db.run('CREATE TABLE t (id BIGINT PRIMARY KEY)');
  return db;
}

const ids = async (db: SqlClient) =>
  (await db.query<{ id: number }>('SELECT id FROM t ORDER BY id')).map((r) => Number(r.id));

describe.skipIf(!pg.available)('a savepoint released by its COMMIT', () => {
  it('STORE-PG-229: the RELEASE before a COMMIT is dropped, the savepoint`s writes commit; other RELEASEs and ROLLBACK TO go out; an aborted transaction still fails', async () => {
    const db = await client();
    const driver = driverStatements();
    restore = driver.restore;
    const put = (id: number) => db.run('INSERT INTO t VALUES ($1)', [id]);
    try {
      await db.transaction(async () => {
        await put(1);
        await db.transaction(async () => put(2));
      });
      expect(driver.sent).toEqual([
        'BEGIN',
        'INSERT INTO t VALUES ($1)',
        'SAVEPOINT svc_sp_1',
        'INSERT INTO t VALUES ($1)',
        'COMMIT',
      ]);
      expect(await ids(db)).toEqual([1, 2]);

      // Released, then another statement: the RELEASE goes with it. A failed savepoint's ROLLBACK
      // TO goes with the COMMIT.
      driver.sent.length = 0;
      await db.transaction(async () => {
        await db.transaction(async () => put(3));
        await put(4);
        await db.transaction(async () => put(4)).catch(() => undefined);
      });
      expect(driver.sent.filter((t) => /SAVEPOINT|COMMIT/.test(t))).toEqual([
        'SAVEPOINT svc_sp_1',
        'RELEASE SAVEPOINT svc_sp_1',
        'SAVEPOINT svc_sp_2',
        'ROLLBACK TO SAVEPOINT svc_sp_2',
        'COMMIT',
      ]);
      expect(await ids(db)).toEqual([1, 2, 3, 4]);

      // A failure caught after a released savepoint: never reported committed.
      await expect(
        db.transaction(async () => {
          await db.transaction(async () => put(5));
          await db.joined(async () => put(1)).catch(() => undefined);
        }),
      ).rejects.toThrow(/rolled the transaction back at its COMMIT/);
      expect(await ids(db)).toEqual([1, 2, 3, 4]);
    } finally {
      await db.close();
    }
  });
});
