/**
 * A statement's path through svc's PostgreSQL client (issue 18, item 6): one promise of svc's per
 * statement over the driver's callback forms, where the layers made ≈ 20 (docs/performance-log.md,
 * 2026-11-30), counted with an async hook (no timing). The statements' behaviour (order, errors,
 * rollbacks, savepoints, batching) is the other pg test files', unchanged.
 */
import { describe, expect, it } from 'vitest';
import { createPostgresClient, type SqlClient } from '../../src/store/postgres/client';
import { postgresForFile } from '../helpers/postgres';
import { promiseCounter } from '../helpers/promise-count';

const pg = postgresForFile();

/** Promises created while `fn` runs (its own awaits included), the fewest over `times` tries. */
async function promisesOf(fn: () => Promise<unknown>, times = 5): Promise<number> {
  let fewest = Number.POSITIVE_INFINITY;
  const counter = promiseCounter();
  for (let i = 0; i < times; i++) {
    counter.start();
    try {
      await fn();
    } finally {
      fewest = Math.min(fewest, counter.stop());
    }
  }
  return fewest;
}

async function clientOf(): Promise<SqlClient> {
  const url = await pg.cluster().createDatabase();
  const db = await createPostgresClient({
    url,
    pool_size: 2,
    statement_timeout_ms: 30_000,
    connect_timeout_ms: 5_000,
  });
  await db.run('CREATE TABLE t (id text PRIMARY KEY, n bigint NOT NULL)');
  await db.run("INSERT INTO t SELECT 'k' || g, g FROM generate_series(1, 10) g");
  return db;
}

describe.skipIf(!pg.available)('PostgreSQL client: promises per statement', () => {
  it('STORE-PG-170: a pooled statement, four issued together and a transaction of three make a few promises each', async () => {
    const db = await clientOf();
    try {
      const select = 'SELECT id, n FROM t WHERE id = $1';
      // Warm: the pool's connections are open.
      await Promise.all([db.one(select, ['k1']), db.one(select, ['k2'])]);
      const awaited = await promisesOf(async () => {
        expect(await db.one<{ n: number }>(select, ['k3'])).toEqual({ id: 'k3', n: 3 });
      });
      const together = await promisesOf(async () => {
        const rows = await Promise.all(['k1', 'k2', 'k3', 'k4'].map((id) => db.one(select, [id])));
        expect(rows.map((row) => row?.n)).toEqual([1, 2, 3, 4]);
      });
      const transaction = await promisesOf(() =>
        db.transaction(async (tx) => {
          await tx.one(select, ['k1']);
          await db.one(select, ['k2']); // ambient: the transaction's connection
          await tx.run('UPDATE t SET n = n WHERE id = $1', ['k3']);
        }),
      );
      // Counted with the test's own awaits: before, 15, 66 and 69; now 4, 12 and 23.
      expect(awaited).toBeLessThanOrEqual(5);
      expect(together).toBeLessThanOrEqual(14);
      expect(transaction).toBeLessThanOrEqual(30);
    } finally {
      await db.close();
    }
  });
});
