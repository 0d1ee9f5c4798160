/**
 * A TCP proxy to a local port that a test can take down (every connection cut, new ones refused)
 * and bring back on the same port: a database or a server that goes away and returns.
 * @module
 */
import { createConnection, createServer, type Server, type Socket } from 'node:net';
import { createPostgresClient } from '../../src/store/postgres/client';
import { migratePostgres } from '../../src/store/postgres/migrate';

export async function tcpProxy(port: number) {
  const sockets = new Set<Socket>();
  let server: Server | undefined;
  let listenPort = 0;
  const up = () =>
    new Promise<void>((resolve) => {
      server = createServer((client) => {
        const upstream = createConnection({ host: '127.0.0.1', port });
        for (const s of [client, upstream]) {
          sockets.add(s);
          s.on('close', () => sockets.delete(s));
          s.on('error', () => {});
        }
        client.pipe(upstream).pipe(client);
      });
      server.listen(listenPort, '127.0.0.1', () => {
        const address = server?.address();
        listenPort = typeof address === 'object' && address ? address.port : 0;
        resolve();
      });
    });
  const down = () =>
    new Promise<void>((resolve) => {
      for (const s of sockets) s.destroy();
      server?.close(() => resolve());
    });
  await up();
  return { port: () => listenPort, up, down };
}

/**
 * A fresh, migrated database reached through a TCP proxy the test can take down and bring back:
 * a node losing its PostgreSQL store and getting it back. Short timeouts, so a lost store shows.
 */
export async function proxiedDatabase(cluster: { port: number; createDatabase(): Promise<string> }) {
  const direct = await cluster.createDatabase();
  const tunnel = await tcpProxy(cluster.port);
  const url = direct.replace(`:${cluster.port}/`, `:${tunnel.port()}/`);
  const sql = await createPostgresClient({
    url,
    pool_size: 2,
    statement_timeout_ms: 5_000,
    connect_timeout_ms: 1_000,
  });
  await migratePostgres(sql);
  return { sql, tunnel };
}

export { until } from './until';
