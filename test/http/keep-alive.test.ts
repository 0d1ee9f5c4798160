/**
 * The HTTP server keeps an idle keep-alive connection 65 s (Node's default is 5 s): longer than the
 * idle timeout of the load balancers in front of a cluster, so the server never closes a
 * connection a balancer or client is about to reuse ("other side closed" on the next request).
 */
import { Agent, request } from 'node:http';
import { describe, expect, it } from 'vitest';
import { startHttpServer } from '../../src/surfaces/http/server';
import { makeTestApp } from '../helpers/make-test-app';

/** GET `url` through `agent`: the status, the Keep-Alive header and the socket's local port. */
function get(url: string, agent: Agent): Promise<{ status: number; keepAlive?: string; port?: number }> {
  return new Promise((resolve, reject) => {
    const req = request(url, { agent }, (res) => {
      res.resume();
      res.on('end', () =>
        resolve({
          status: res.statusCode ?? 0,
          keepAlive: res.headers['keep-alive'] as string | undefined,
          port: req.socket?.localPort,
        }),
      );
    });
    req.on('error', reject);
    req.end();
  });
}

describe('keep-alive connections of the HTTP server', () => {
  it('HTTP-13: an answer advertises a 65 s keep-alive; the idle connection is reused; close() does not wait for it', async () => {
    const app = await makeTestApp();
    const server = await startHttpServer({
      config: app.config,
      flags: { port: 0, auth: 'none' },
      createApp: async () => app,
    });
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    try {
      const first = await get(`${server.url}/healthz`, agent);
      expect(first.status).toBe(200);
      expect(first.keepAlive).toBe('timeout=65');
      const second = await get(`${server.url}/healthz`, agent);
      expect(second.status).toBe(200);
      expect(second.port).toBe(first.port);
    } finally {
      // An idle keep-alive connection is open: the close must not wait out its 65 s (the test's
      // own timeout would fail it).
      await server.close();
      agent.destroy();
    }
  }, 20_000);
});
