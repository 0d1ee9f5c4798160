/**
 * A body that joins the open transaction with no savepoint of its own (issue 18 item 6, p-pgtx):
 * `SqlClient.joined` / `StoreTransactions.join`, used by the compat start for its send, whose
 * failure fails the start's transaction anyway. Pinned here: no SAVEPOINT or RELEASE is sent for
 * it (counted at the driver, where the control statements go), its writes commit with the
 * transaction, its failure rolls all of it back, and a failure caught inside an unprotected body
 * is never reported committed (PostgreSQL answers such a COMMIT with ROLLBACK and no error).
 */
import { afterEach, describe, expect, it } from 'vitest';
import { createPostgresClient, type SqlClient } from '../../src/store/postgres/client';
import { reply } from '../helpers/fake-provider';
import { driverStatements, migratedDatabase, postgresForFile } from '../helpers/postgres';
import { compatServer, settledCompatRow, streamedAnswer } from '../http/compat-helpers';

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
  (await db.query<{ id: number }>('SELECT id FROM t ORDER BY id')).map((r) => r.id);

describe.skipIf(!pg.available)('joining the open transaction without a savepoint', () => {
  it('STORE-PG-120: joined sends no SAVEPOINT or RELEASE; its writes commit with the transaction, its failure rolls it all back', async () => {
    const db = await client();
    const driver = driverStatements();
    restore = driver.restore;
    try {
      const put = (id: number) => db.run('INSERT INTO t VALUES ($1)', [id]);
      await db.transaction(async () => {
        await put(1);
        const inside = await db.joined(async () => {
          await put(2);
          return db.inTransaction();
        });
        expect(inside).toBe(true);
        await put(3);
      });
      expect(driver.sent.filter((t) => /SAVEPOINT/.test(t))).toEqual([]);
      expect(await ids(db)).toEqual([1, 2, 3]);

      await expect(
        db.transaction(async () => {
          await put(4);
          await db.joined(async () => {
            await put(5);
            await put(1); // duplicate key
          });
        }),
      ).rejects.toThrow();
      expect(await ids(db)).toEqual([1, 2, 3]);

      // Outside a transaction it is one of its own.
      await expect(
        db.joined(async () => {
          await put(6);
          await put(1);
        }),
      ).rejects.toThrow();
      expect(await ids(db)).toEqual([1, 2, 3]);
    } finally {
      await db.close();
    }
  });

  it('STORE-PG-121: a failure caught inside the transaction makes its COMMIT throw: nothing is reported committed', async () => {
    const db = await client();
    try {
      const put = (id: number) => db.run('INSERT INTO t VALUES ($1)', [id]);
      await put(1);
      const outcome = db.transaction(async () => {
        await put(2);
        await db.joined(() => put(1)).catch(() => {}); // caught: the transaction is aborted
        return 'done';
      });
      await expect(outcome).rejects.toThrow(/rolled the transaction back at its COMMIT/);
      expect(await ids(db)).toEqual([1]);
      // The connection is usable afterwards.
      await db.transaction(async () => put(3));
      expect(await ids(db)).toEqual([1, 3]);
    } finally {
      await db.close();
    }
  });

  it('STORE-PG-122: a compat request`s start sends no savepoint: none for its send, none for its ledger row (p-pgcompat2)', async () => {
    const sql = await migratedDatabase(pg.cluster());
    const { app, client: openai } = await compatServer([reply().text('warm'), reply().text('one')], {
      postgres: sql,
    });
    try {
      const ask = () => streamedAnswer(openai);
      await ask();
      await app.bus.flush();
      const driver = driverStatements();
      restore = driver.restore;
      expect(await ask()).toBe('one');
      const row = await settledCompatRow(app);
      restore();
      expect(row.status).toBe('completed');
      // The ledger row's write skips a request id already there instead of failing (STORE-PG-260).
      expect(driver.sent.filter((t) => /SAVEPOINT /.test(t))).toEqual([]);
      // The start is one statement that goes alone, with no BEGIN or COMMIT (p-pgstart2, STORE-PG-297).
      expect(driver.sent.filter((t) => /^BEGIN/.test(t))).toEqual([]);
      // The run, its session and the request's row were all written by the one start.
      expect(await app.runs.get(row.run_id)).toMatchObject({ status: 'completed', origin: 'openai_compat' });
      expect((await app.runs.events(row.run_id)).map((e) => e.type)).toContain('openai_compat.request');
    } finally {
      await app.close();
      await sql.close();
    }
  });
});
