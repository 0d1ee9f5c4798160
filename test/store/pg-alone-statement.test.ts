/**
 * A transaction's first statement sent alone on PostgreSQL (`SqlClient.alone`, p-pgstart2): no
 * BEGIN and no COMMIT when nothing else is in the transaction; its own commit at its answer (the
 * read scope's copies of the transaction's writes go stale then, as at a COMMIT); a later
 * statement begins the transaction; not the first, it is part of the transaction as any other.
 */
import { describe, expect, it } from 'vitest';
import { createPostgresClient } from '../../src/store/postgres/client';
import { driverStatements, postgresForFile } from '../helpers/postgres';

const pg = postgresForFile();

describe.skipIf(!pg.available)('a transaction’s first statement alone', () => {
  it('STORE-PG-297: alone first: no BEGIN, no COMMIT, committed at its answer (seen by another connection, `onWritten` told then, `onEnd` at the end); a statement after it begins the transaction; alone after another, rolled back with it; a failing one leaves nothing', async () => {
    const url = await pg.cluster().createDatabase();
    const sql = await createPostgresClient({
      url,
      pool_size: 2,
      statement_timeout_ms: 30_000,
      connect_timeout_ms: 5_000,
    });
    const statements = driverStatements();
    try {
      await sql.run('CREATE TABLE t (id int PRIMARY KEY)');
      const count = async () =>
        (await sql.autocommit.one<{ n: number }>('SELECT count(*)::int AS n FROM t'))?.n;
      const alone = sql.alone!;

      // Alone in its transaction: the statement only; committed before the body ends.
      let from = statements.sent.length;
      const ends: string[] = [];
      await sql.transaction(async () => {
        sql.transactionNow()!.onWritten!((kept) => ends.push(`written ${kept}`));
        sql.transactionNow()!.onEnd((kept) => ends.push(`end ${kept}`));
        await alone.run('INSERT INTO t VALUES (1)');
        expect(ends).toEqual(['written true']);
        expect(await count()).toBe(1);
      });
      expect(ends).toEqual(['written true', 'end true']);
      expect(statements.sent.slice(from)).toEqual([
        'INSERT INTO t VALUES (1)',
        'SELECT count(*)::int AS n FROM t',
      ]);

      // A statement after it begins the transaction, which a throw rolls back (the first stays).
      from = statements.sent.length;
      await expect(
        sql.transaction(async () => {
          await alone.run('INSERT INTO t VALUES (2)');
          await sql.run('INSERT INTO t VALUES (3)');
          throw new Error('after');
        }),
      ).rejects.toThrow('after');
      expect(statements.sent.slice(from)).toEqual([
        'INSERT INTO t VALUES (2)',
        'BEGIN',
        'INSERT INTO t VALUES (3)',
        'ROLLBACK',
      ]);
      expect((await sql.query<{ id: number }>('SELECT id FROM t ORDER BY id')).map((r) => r.id)).toEqual([
        1, 2,
      ]);

      // Not the first: part of the transaction, rolled back with it.
      from = statements.sent.length;
      await expect(
        sql.transaction(async () => {
          await sql.run('INSERT INTO t VALUES (4)');
          await alone.run('INSERT INTO t VALUES (5)');
          throw new Error('rolled back');
        }),
      ).rejects.toThrow('rolled back');
      expect(statements.sent.slice(from)).toEqual([
        'BEGIN',
        'INSERT INTO t VALUES (4)',
        'INSERT INTO t VALUES (5)',
        'ROLLBACK',
      ]);
      // In a savepoint: part of it too.
      await sql.transaction(async () => {
        await sql.transaction(async () => {
          await alone.run('INSERT INTO t VALUES (6)');
        });
      });
      // A failing one: nothing written, nothing else sent.
      from = statements.sent.length;
      await expect(
        sql.transaction(async () => {
          await alone.run('INSERT INTO t VALUES (1)');
        }),
      ).rejects.toThrow(/duplicate key|t_pkey/);
      expect(statements.sent.slice(from)).toEqual(['INSERT INTO t VALUES (1)']);
      expect((await sql.query<{ id: number }>('SELECT id FROM t ORDER BY id')).map((r) => r.id)).toEqual([
        1, 2, 6,
      ]);
      // Outside a transaction: a statement of the pool.
      await alone.run('INSERT INTO t VALUES (7)');
      expect(await count()).toBe(4);
    } finally {
      statements.restore();
      await sql.close();
    }
  });
});
