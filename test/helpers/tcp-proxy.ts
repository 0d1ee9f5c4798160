/**
 * A TCP proxy to a local port that a test can take down (every connection cut, new ones refused)
 * and bring back on the same port: a database or a server that goes away and returns.
 * @module
 */
import { createConnection, createServer, type Server, type Socket } from 'node:net';

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
