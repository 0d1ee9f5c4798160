/**
 * One connection of the pool kept by svc between uses (issue 18 item 6, p-pgconn,
 * src/store/postgres/kept-connection.ts): a transaction, then a statement outside it, one at a time
 * (a lone compat request's start and finish) take no pg-pool checkout, set no timer and add no
 * `error` listener once warm (each took a checkout: its connect-timeout and idle timers, pg-pool's
 * listeners). Counted, never timed. What must not change: the pool's size, a connection the server
 * drops, a statement's failure, the close.
 */
import { describe, expect, it } from 'vitest';
import { createPostgresClient, type SqlClient } from '../../src/store/postgres/client';
import { fewestPoolCounts as fewest } from '../helpers/pg-pool-counts';
import { postgresForFile } from '../helpers/postgres';
import { until } from '../helpers/until';

const pg = postgresForFile();

async function clientOf(poolSize = 2): Promise<{ db: SqlClient; url: string }> {
  const url = await pg.cluster().createDatabase();
  const db = await createPostgresClient({
    url,
    pool_size: poolSize,
    statement_timeout_ms: 30_000,
    connect_timeout_ms: 5_000,
  });
  await db.run('CREATE TABLE t (id text PRIMARY KEY, n bigint NOT NULL)');
  await db.run("INSERT INTO t SELECT 'k' || g, g FROM generate_series(1, 10) g");
  return { db, url };
}

const pid = async (db: SqlClient) =>
  (await db.one<{ pid: number }>('SELECT pg_backend_pid() AS pid'))?.pid as number;

describe.skipIf(!pg.available)('PostgreSQL client: a connection kept between uses', () => {
  it('STORE-PG-870: a transaction (its first statement alone) then a statement outside it, one at a time: no pg-pool checkout, no timer, no `error` listener; both on the one kept connection', async () => {
    const { db } = await clientOf();
    try {
      const lone = async () => {
        const started = await db.transaction(async () => {
          const alone = db.alone ?? db;
          return await alone.one<{ pid: number }>(
            "UPDATE t SET n = n + 1 WHERE id = 'k1' RETURNING pg_backend_pid() AS pid",
          );
        });
        const finished = await db.one<{ pid: number }>(
          "UPDATE t SET n = n + 1 WHERE id = 'k2' RETURNING pg_backend_pid() AS pid",
        );
        return [started?.pid, finished?.pid];
      };
      await lone(); // warm: a connection open and kept
      const counts = await fewest(lone);
      // Was 2 checkouts, 4 timers (connect timeout, idle timeout, each checkout) and 4 listeners.
      expect(counts).toEqual({ checkouts: 0, timers: 0, errorListeners: 0 });
      const [a, b] = await lone();
      expect(a).toBe(b);
      expect(await db.one<{ n: number }>("SELECT n FROM t WHERE id = 'k1'")).toEqual({ n: 6 });
    } finally {
      await db.close();
    }
  });

  it('STORE-PG-871: the pool’s size holds: with one connection, a statement waiting for the pool while a transaction holds it is answered at that transaction’s end (the connection not kept from it)', async () => {
    const { db } = await clientOf(1);
    try {
      await db.one('SELECT 1 AS one'); // the one connection, kept
      let open!: () => void;
      const gate = new Promise<void>((resolve) => {
        open = resolve;
      });
      let holding = false;
      const inside = db.transaction(async (tx) => {
        await tx.run("UPDATE t SET n = 0 WHERE id = 'k3'");
        holding = true;
        await gate;
      });
      await until(() => holding); // the transaction holds the one connection
      let answered = false;
      const waiting = db.autocommit.one<{ n: number }>("SELECT n FROM t WHERE id = 'k3'").then((row) => {
        answered = true;
        return row;
      });
      await new Promise((resolve) => setTimeout(resolve, 50));
      expect(answered).toBe(false);
      open();
      await inside;
      expect(await waiting).toEqual({ n: 0 });
      // And again: both ways still work on the one connection.
      await db.transaction(async (tx) => tx.run("UPDATE t SET n = 1 WHERE id = 'k3'"));
      expect(await db.one("SELECT n FROM t WHERE id = 'k3'")).toEqual({ n: 1 });
    } finally {
      await db.close();
    }
  });

  it('STORE-PG-872: a kept connection the server drops while idle is let go at once (`onConnectionGone`, no longer owned); the next statement and transaction run on a new one', async () => {
    const { db, url } = await clientOf();
    const other = await createPostgresClient({
      url,
      pool_size: 1,
      statement_timeout_ms: 30_000,
      connect_timeout_ms: 5_000,
    });
    try {
      const before = await pid(db);
      expect(db.ownsBackend?.(before)).toBe(true);
      let gone = 0;
      db.onConnectionGone?.(() => {
        gone++;
      });
      await other.one('SELECT pg_terminate_backend($1)', [before]);
      await until(() => gone > 0);
      expect(db.ownsBackend?.(before)).toBe(false);
      const after = await pid(db);
      expect(after).not.toBe(before);
      await db.transaction(async (tx) => tx.run("UPDATE t SET n = 7 WHERE id = 'k4'"));
      expect(await db.one("SELECT n FROM t WHERE id = 'k4'")).toEqual({ n: 7 });
    } finally {
      await other.close();
      await db.close();
    }
  });

  it('STORE-PG-873: a statement outside a transaction that fails gives its connection back to be ended (as `pool.query` did); a transaction whose statement fails keeps its connection usable; the close ends with a connection kept', async () => {
    const { db } = await clientOf();
    try {
      const first = await pid(db);
      await expect(db.run("INSERT INTO t VALUES ('k1', 1)")).rejects.toThrow();
      const second = await pid(db);
      expect(second).not.toBe(first);
      await expect(
        db.transaction(async (tx) => {
          await tx.run("INSERT INTO t VALUES ('k1', 1)");
        }),
      ).rejects.toThrow();
      expect(await pid(db)).toBe(second);
      expect(await db.one("SELECT n FROM t WHERE id = 'k5'")).toEqual({ n: 5 });
    } finally {
      await db.close(); // resolves: the kept connection released before the pool's end
    }
  });
});
