/**
 * A transaction's control statements on PostgreSQL (issue 18, item 6): BEGIN, SAVEPOINT, RELEASE
 * and ROLLBACK TO go out with the next statement the transaction sends, in one write, instead of
 * a round trip each; a savepoint whose body sends nothing sends nothing. The outcome is that of
 * the statements sent one at a time: what a failed savepoint wrote is rolled back, the rest
 * commits, a failed transaction leaves nothing.
 */
import { executionAsyncId } from 'node:async_hooks';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createPostgresClient } from '../../src/store/postgres/client';
import { postgresForFile } from '../helpers/postgres';
import { writesDuring } from '../helpers/socket-writes';

const pg = postgresForFile();

/** The async id a promise continuation runs under: 0 while no async hook tracks promises. */
async function continuationId(): Promise<number> {
  await null;
  return executionAsyncId();
}

afterEach(() => {
  vi.restoreAllMocks();
});

describe.skipIf(!pg.available)('PostgreSQL control statements', () => {
  it('STORE-PG-71: BEGIN, SAVEPOINT, RELEASE and ROLLBACK TO ride with the next statement: one write each, the same outcome', async () => {
    const url = await pg.cluster().createDatabase();
    const db = await createPostgresClient({
      url,
      pool_size: 1,
      statement_timeout_ms: 30_000,
      connect_timeout_ms: 2_000,
    });
    try {
      await db.run('CREATE TABLE t (id BIGINT PRIMARY KEY)');
      const put = (id: number) => db.run('INSERT INTO t VALUES ($1)', [id]);
      const body = async () => {
        await db.transaction(async () => {
          await db.transaction(async () => {
            await put(1);
          });
          await db.transaction(async () => {
            // nothing to write this time
          });
          await put(2);
          await expect(
            db.transaction(async () => {
              await put(3);
              await put(1); // duplicate key: the savepoint rolls back, 3 with it
            }),
          ).rejects.toThrow();
          await db.transaction(async () => {
            await db.transaction(async () => {
              await put(4);
            });
          });
        });
      };
      // Statements sent: BEGIN+SAVEPOINT+1, RELEASE+2, SAVEPOINT+3, 1 (fails),
      // ROLLBACK TO+SAVEPOINT+SAVEPOINT+4, RELEASE+RELEASE+COMMIT: 6 writes (one at a time: 17).
      const writes = await writesDuring(body);
      expect(writes).toBeLessThanOrEqual(6);
      expect((await db.query<{ id: number }>('SELECT id FROM t ORDER BY id')).map((r) => r.id)).toEqual([
        1, 2, 4,
      ]);
      // A transaction that throws after its writes leaves nothing; one that sends nothing sends nothing.
      await expect(
        db.transaction(async () => {
          await put(5);
          throw new Error('stop');
        }),
      ).rejects.toThrow('stop');
      expect(await writesDuring(() => db.transaction(async () => db.transaction(async () => {})))).toBe(0);
      expect((await db.query<{ id: number }>('SELECT id FROM t ORDER BY id')).map((r) => r.id)).toEqual([
        1, 2, 4,
      ]);
      // The connection is in a clean state afterwards: a new transaction commits.
      await db.transaction(async () => {
        await put(6);
      });
      expect((await db.one<{ n: number }>('SELECT count(*) AS n FROM t'))?.n).toBe(4);
    } finally {
      await db.close();
    }
  });

  it('STORE-PG-76: promise hooks are off once no transaction is open; work a transaction left behind still reads after its COMMIT', async () => {
    const url = await pg.cluster().createDatabase();
    const db = await createPostgresClient({
      url,
      pool_size: 2,
      statement_timeout_ms: 30_000,
      connect_timeout_ms: 2_000,
    });
    try {
      await db.run('CREATE TABLE t (id BIGINT PRIMARY KEY)');
      let later: Promise<number | undefined> | undefined;
      await db.transaction(async () => {
        await db.run('INSERT INTO t VALUES (1)');
        // Not awaited: its read runs once the body has ended, before or after the COMMIT.
        later = (async () => {
          await new Promise((resolve) => setImmediate(resolve));
          return (await db.one<{ n: number }>('SELECT count(*) AS n FROM t'))?.n;
        })();
      });
      expect(await later).toBe(1);
      // No scope open: no hook tracks this process's promises (Node 20's AsyncLocalStorage).
      expect(await continuationId()).toBe(0);
    } finally {
      await db.close();
    }
  });
});
