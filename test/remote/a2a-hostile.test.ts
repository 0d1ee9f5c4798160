/**
 * Delegation against hostile A2A agents (plain node:http servers on 127.0.0.1:0). Pins:
 * - an answer is read only up to the size cap, also when it comes chunked (no content-length);
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, expect, it, onTestFinished } from 'vitest';
import { fetchAgentCard } from '../../src/remote/a2a-client';

interface Seen {
  method: string;
  path: string;
  auth?: string;
  rpc?: string;
}

interface Agent {
  url: string;
  seen: Seen[];
}

type Handler = (req: IncomingMessage, res: ServerResponse, body: string) => void;

async function agent(handler: Handler): Promise<Agent> {
  const seen: Seen[] = [];
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (chunk) => {
      body += chunk;
    });
    req.on('end', () => {
      let rpc: string | undefined;
      try {
        rpc = JSON.parse(body).method;
      } catch {}
      seen.push({ method: req.method ?? '', path: req.url ?? '', auth: req.headers.authorization, rpc });
      handler(req, res, body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  onTestFinished(
    () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  );
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, seen };
}

describe('A2A delegation to hostile agents', () => {
  it('reads a chunked answer only up to the cap and names the remote', async () => {
    let written = 0;
    let closed = false;
    const total = 64 * 1024 * 1024;
    const huge = await agent((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' }); // no content-length: chunked
      res.on('close', () => {
        closed = true;
      });
      const chunk = 'x'.repeat(64 * 1024);
      res.write('{"name":"big","url":"/a2a","description":"');
      const pump = () => {
        while (written < total && !closed) {
          written += chunk.length;
          if (!res.write(chunk)) return void res.once('drain', pump);
        }
        if (!closed) res.end('"}');
      };
      pump();
    });
    await expect(fetchAgentCard(`${huge.url}/card.json`, { fetch, maxBytes: 256 * 1024 })).rejects.toThrow(
      `the answer of ${huge.url} is over the 262144-byte cap for A2A answers`,
    );
    // The read stopped at the cap: the server never got to write the whole body.
    await expect.poll(() => closed, { timeout: 10_000 }).toBe(true);
    expect(written).toBeLessThan(total);
  }, 30_000);
});
