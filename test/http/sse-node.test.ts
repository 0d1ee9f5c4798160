/**
 * SSE written straight to the Node response (src/surfaces/http/sse-node.ts), the compat stream's
 * path under `svc service start http`. Pins, over a real socket: the same framing and headers as
 * the web-stream path, the end of the stream ends the response, a client that goes away tears the
 * stream down once, a client that stops reading is dropped at the backlog limit, and node-server
 * leaves the route's own answer alone (no second head).
 */
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createAdaptorServer } from '@hono/node-server';
import { Hono } from 'hono';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createStreamTracker, openSseStream, type SseStream } from '../../src/surfaces/http/sse';
import { nodeResponseOf, openRouteSseStream } from '../../src/surfaces/http/sse-node';

const servers: Server[] = [];

afterEach(async () => {
  for (const server of servers.splice(0)) {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
});

/** A server whose one route opens a stream and hands it to `use`. */
async function serve(use: (stream: SseStream) => void, options: { maxBacklogBytes?: number } = {}) {
  const tracker = createStreamTracker();
  const hono = new Hono();
  hono.get('/s', (c) => {
    const { stream, response } = openRouteSseStream(
      c,
      { heartbeatMs: 0, tracker, signal: c.req.raw.signal, ...options },
      { 'x-extra': 'yes' },
    );
    use(stream);
    return response;
  });
  const server = createAdaptorServer({ fetch: hono.fetch }) as Server;
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/s`, tracker };
}

describe('SSE on the Node response', () => {
  it('sends the SSE head with the route headers, the events as framed, and ends', async () => {
    const closed = vi.fn();
    const { url, tracker } = await serve((stream) => {
      stream.onClose(closed);
      stream.send({ event: 'one', id: 1, data: 'a\nb' });
      setTimeout(() => stream.close({ data: '[DONE]' }), 5);
    });
    const response = await fetch(url);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe('text/event-stream; charset=utf-8');
    expect(response.headers.get('cache-control')).toBe('no-cache, no-transform');
    expect(response.headers.get('x-extra')).toBe('yes');
    expect(response.headers.get('x-hono-already-sent')).toBeNull();
    expect(await response.text()).toBe('event: one\nid: 1\ndata: a\ndata: b\n\ndata: [DONE]\n\n');
    expect(closed).toHaveBeenCalledTimes(1);
    expect(tracker.size).toBe(0);
  });

  it('tears down once when the client goes away', async () => {
    const closed = vi.fn();
    let opened: SseStream | undefined;
    const { url, tracker } = await serve((stream) => {
      opened = stream;
      stream.onClose(closed);
      stream.send({ data: 'first' });
    });
    const controller = new AbortController();
    const response = await fetch(url, { signal: controller.signal });
    const reader = response.body!.getReader();
    expect(new TextDecoder().decode((await reader.read()).value)).toBe('data: first\n\n');
    controller.abort();
    await vi.waitFor(() => expect(closed).toHaveBeenCalledTimes(1), { timeout: 10_000 });
    expect(opened?.closed).toBe(true);
    expect(opened?.send({ data: 'late' })).toBe(false);
    expect(tracker.size).toBe(0);
  });

  it('drops a client that lets the backlog grow past the limit', async () => {
    const closed = vi.fn();
    let sent = 0;
    let stream: SseStream | undefined;
    const { url } = await serve(
      (s) => {
        stream = s;
        s.onClose(closed);
      },
      { maxBacklogBytes: 64 * 1024 },
    );
    // Read the head only, then stop reading.
    const response = await fetch(url);
    expect(response.status).toBe(200);
    while (stream?.send({ data: 'x'.repeat(16 * 1024) })) {
      sent++;
      if (sent > 100_000) break;
    }
    expect(stream?.closed).toBe(true);
    expect(sent).toBeLessThan(100_000);
    expect(closed).toHaveBeenCalledTimes(1);
    await response.body?.cancel().catch(() => {});
  });

  it('a web stream dropped as too slow cuts the connection, with no stack on stderr', async () => {
    // The session event stream's path: a web ReadableStream under node-server. Erroring it made
    // node-server console.error the error's stack and append `Error: …` to the event stream.
    const errors = vi.spyOn(console, 'error').mockImplementation(() => {});
    try {
      let stream: SseStream | undefined;
      const closed = vi.fn();
      const hono = new Hono();
      hono.get('/w', (c) => {
        const outgoing = nodeResponseOf(c);
        const opened = openSseStream({
          heartbeatMs: 0,
          maxBacklogBytes: 64 * 1024,
          dropConnection: outgoing ? () => outgoing.destroy() : undefined,
        });
        stream = opened.stream;
        stream.onClose(closed);
        return opened.response;
      });
      const server = createAdaptorServer({ fetch: hono.fetch }) as Server;
      servers.push(server);
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      const response = await fetch(`http://127.0.0.1:${(server.address() as AddressInfo).port}/w`);
      expect(response.status).toBe(200);
      let sent = 0;
      while (stream?.send({ data: 'x'.repeat(16 * 1024) }) && ++sent < 100_000) {
        // Node's socket buffer takes some: send until the backlog limit drops the client.
      }
      expect(stream?.closed).toBe(true);
      expect(closed).toHaveBeenCalledTimes(1);
      // The client sees its connection end (not an `Error:` line), and nothing was printed.
      await expect(response.text()).rejects.toThrow();
      await new Promise((resolve) => setTimeout(resolve, 50));
      expect(errors).not.toHaveBeenCalled();
    } finally {
      errors.mockRestore();
    }
  });
});
