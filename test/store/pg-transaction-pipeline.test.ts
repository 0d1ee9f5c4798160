/**
 * A transaction's statements on PostgreSQL sent without awaiting each other (issue 18, item 6):
 * they go out back to back on the transaction's connection (pg's pipeline mode) and are answered
 * in one round trip, run in call order; a failed one fails the transaction as before.
 */
import { connect, createServer, type Server, type Socket } from 'node:net';
import { describe, expect, it } from 'vitest';
import { createPostgresClient, type SqlClient } from '../../src/store/postgres/client';
import { postgresForFile } from '../helpers/postgres';

const pg = postgresForFile();

/**
 * A TCP relay to PostgreSQL that counts round trips: how many times, after the server answered,
 * the client wrote again (the first write counts as one).
 */
async function relay(target: URL): Promise<{ port: number; roundTrips: () => number; close: () => void }> {
  let trips = 0;
  let last: 'client' | 'server' = 'server';
  const sockets = new Set<Socket>();
  const server: Server = createServer((client) => {
    const upstream = connect(Number(target.port), target.hostname);
    sockets.add(client).add(upstream);
    client.on('data', (chunk) => {
      if (last === 'server') trips++;
      last = 'client';
      upstream.write(chunk);
    });
    upstream.on('data', (chunk) => {
      last = 'server';
      client.write(chunk);
    });
    client.on('error', () => upstream.destroy());
    upstream.on('error', () => client.destroy());
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  return {
    port,
    roundTrips: () => trips,
    close: () => {
      for (const socket of sockets) socket.destroy();
      server.close();
    },
  };
}

describe.skipIf(!pg.available)('PostgreSQL transactions: statements sent together', () => {
  it('STORE-PG-90: statements a transaction sends without awaiting each other take one round trip, in call order; a failure fails the transaction', async () => {
    const url = new URL(await pg.cluster().createDatabase());
    const proxy = await relay(url);
    const through = new URL(url);
    through.hostname = '127.0.0.1';
    through.port = String(proxy.port);
    const db: SqlClient = await createPostgresClient({
      url: through.toString(),
      pool_size: 1,
      statement_timeout_ms: 30_000,
      connect_timeout_ms: 2_000,
    });
    try {
      await db.run('CREATE TABLE t (id BIGINT PRIMARY KEY, v TEXT)');
      const before = proxy.roundTrips();
      const answers = await db.transaction(async (tx) =>
        Promise.all([
          tx.run('INSERT INTO t VALUES ($1, $2)', [1, 'one']),
          tx.run('UPDATE t SET v = $1 WHERE id = $2', ['uno', 1]),
          tx.run('INSERT INTO t VALUES ($1, $2)', [2, 'two']),
          tx.one<{ n: number; v: string }>('SELECT count(*) AS n, min(v) AS v FROM t'),
        ]),
      );
      // BEGIN and the four statements in one round trip, the COMMIT in a second (one at a time: five).
      expect(proxy.roundTrips() - before).toBe(2);
      // Run in call order: the UPDATE saw the first INSERT, the count both.
      expect(answers).toEqual([1, 1, 1, { n: 2, v: 'two' }]);
      expect(await db.query('SELECT id, v FROM t ORDER BY id')).toEqual([
        { id: 1, v: 'uno' },
        { id: 2, v: 'two' },
      ]);

      // A failed statement among them: the ones after it fail too, the transaction rolls back.
      let settled: PromiseSettledResult<number>[] = [];
      await expect(
        db.transaction(async (tx) => {
          settled = await Promise.allSettled([
            tx.run('INSERT INTO t VALUES ($1, $2)', [3, 'three']),
            tx.run('INSERT INTO t VALUES ($1, $2)', [1, 'again']),
            tx.run('INSERT INTO t VALUES ($1, $2)', [4, 'four']),
          ]);
          const failed = settled.find((s) => s.status === 'rejected');
          if (failed) throw (failed as PromiseRejectedResult).reason;
        }),
      ).rejects.toThrow(/duplicate key/);
      expect(settled.map((s) => s.status)).toEqual(['fulfilled', 'rejected', 'rejected']);
      expect(String((settled[2] as PromiseRejectedResult).reason)).toMatch(/aborted/);
      expect(await db.query('SELECT id FROM t ORDER BY id')).toEqual([{ id: 1 }, { id: 2 }]);

      // A savepoint among them keeps its place: rolled back alone, the statements around it kept.
      await db.transaction(async (tx) => {
        const first = tx.run('INSERT INTO t VALUES ($1, $2)', [5, 'five']);
        const nested = db
          .transaction(async (inner) => {
            await inner.run('INSERT INTO t VALUES ($1, $2)', [6, 'six']);
            throw new Error('undo six');
          })
          .catch(() => 'undone');
        await Promise.all([first, nested]);
        await tx.run('INSERT INTO t VALUES ($1, $2)', [7, 'seven']);
      });
      expect(await db.query('SELECT id FROM t ORDER BY id')).toEqual([
        { id: 1 },
        { id: 2 },
        { id: 5 },
        { id: 7 },
      ]);
    } finally {
      await db.close();
      proxy.close();
    }
  });
});
