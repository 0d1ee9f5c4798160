/**
 * The writes of an SSE stream on the Node response (src/surfaces/http/sse-node.ts), read as raw
 * HTTP from a plain TCP client so the chunked framing shows: the events sent in one turn go out as
 * one HTTP chunk in one socket write (with the head when they are the first); the last events go
 * with the end of the body; an event is never held for a later turn; the client reads the same
 * text as before; the backlog limit still drops a reader that does not read; a client that goes
 * away ends the stream through the response, without a listener on the request's signal.
 */
import type { Server } from 'node:http';
import { type AddressInfo, connect, Socket } from 'node:net';
import { createAdaptorServer } from '@hono/node-server';
import { Hono } from 'hono';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createStreamTracker, type SseStream } from '../../src/surfaces/http/sse';
import { openRouteSseStream } from '../../src/surfaces/http/sse-node';

const restore: (() => void)[] = [];
afterEach(async () => {
  for (const undo of restore.splice(0).reverse()) await undo();
});

/** Count the server's socket writes (one `_writeGeneric` is one write request to the kernel). */
function countSocketWrites(ports: () => number | undefined): { writes: string[] } {
  const proto = Socket.prototype as unknown as Record<string, (...args: any[]) => unknown>;
  const generic = proto._writeGeneric;
  const seen = { writes: [] as string[] };
  proto._writeGeneric = function (this: Socket, writev_: boolean, data: any, ...rest: unknown[]) {
    if (this.localPort === ports()) {
      const text = writev_
        ? (data as { chunk: unknown }[]).map((d) => String(d.chunk)).join('')
        : String(data);
      seen.writes.push(text);
    }
    return generic.call(this, writev_, data, ...rest);
  };
  restore.push(() => {
    proto._writeGeneric = generic;
  });
  return seen;
}

/** A server whose one route opens a stream and hands it to `use`; its writes are counted. */
async function serve(use: (stream: SseStream) => void, maxBacklogBytes?: number) {
  const hono = new Hono();
  hono.get('/s', (c) => {
    const { stream, response } = openRouteSseStream(c, {
      heartbeatMs: 0,
      tracker: createStreamTracker(),
      signal: c.req.raw.signal,
      maxBacklogBytes,
    });
    use(stream);
    return response;
  });
  const server = createAdaptorServer({ fetch: hono.fetch }) as Server;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  const seen = countSocketWrites(() => port);
  restore.push(
    () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  );
  return { port, seen };
}

/** A raw HTTP/1.1 GET: `onData` sees each read; resolves with everything once the body ends. */
function rawGet(port: number, onData: (text: string) => void = () => {}): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () =>
      socket.write('GET /s HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n'),
    );
    let all = '';
    socket.setEncoding('utf8');
    socket.on('data', (text: string) => {
      all += text;
      onData(all);
      // The SSE head says keep-alive: the body's end, not the socket's, ends the answer.
      if (all.endsWith('\r\n0\r\n\r\n')) {
        socket.destroy();
        resolve(all);
      }
    });
    socket.on('end', () => resolve(all));
    socket.on('error', reject);
  });
}

/** The chunks of a chunked body, as sent (each chunk's text). */
function httpChunks(raw: string): string[] {
  let rest = raw.slice(raw.indexOf('\r\n\r\n') + 4);
  const chunks: string[] = [];
  for (;;) {
    const line = rest.indexOf('\r\n');
    const size = Number.parseInt(rest.slice(0, line), 16);
    if (!(size > 0)) return chunks;
    // The test's text is ASCII: a size in bytes is a size in characters.
    chunks.push(rest.slice(line + 2, line + 2 + size));
    rest = rest.slice(line + 2 + size + 2);
  }
}

describe('SSE writes on the Node response', () => {
  it('ENGINE-SSE-1: the events of one turn are one HTTP chunk in one socket write, with the head', async () => {
    const { port, seen } = await serve((stream) => {
      stream.send({ data: 'a' });
      stream.send({ data: 'b' });
      stream.send({ event: 'e', id: 3, data: 'c\nd' });
      setTimeout(() => stream.close(), 20);
    });
    const raw = await rawGet(port);
    expect(httpChunks(raw)).toEqual(['data: a\n\ndata: b\n\nevent: e\nid: 3\ndata: c\ndata: d\n\n']);
    // The head and the three events in one write; the end of the body in a second.
    expect(seen.writes).toHaveLength(2);
    expect(seen.writes[0]).toMatch(/^HTTP\/1\.1 200 OK\r\n[\s\S]*data: a\n\ndata: b\n\n/);
    expect(seen.writes[1]).toBe('0\r\n\r\n');
  });

  it('ENGINE-SSE-2: the events of one turn sent across promise callbacks are still one write', async () => {
    const { port, seen } = await serve((stream) => {
      stream.send({ data: 'first' });
      stream.flush();
      setTimeout(async () => {
        stream.send({ data: 'one' });
        await Promise.resolve();
        stream.send({ data: 'two' });
        await Promise.resolve();
        stream.send({ data: 'three' });
        setTimeout(() => stream.close(), 20);
      }, 10);
    });
    const raw = await rawGet(port);
    expect(httpChunks(raw)).toEqual(['data: first\n\n', 'data: one\n\ndata: two\n\ndata: three\n\n']);
    expect(seen.writes).toHaveLength(3);
  });

  it('ENGINE-SSE-3: the last events and the end of the body are one write', async () => {
    const { port, seen } = await serve((stream) => {
      stream.send({ data: 'first' });
      setTimeout(() => {
        stream.send({ data: 'finish' });
        stream.send({ data: 'usage' });
        stream.close({ data: '[DONE]' });
      }, 10);
    });
    const raw = await rawGet(port);
    expect(httpChunks(raw)).toEqual(['data: first\n\n', 'data: finish\n\ndata: usage\n\ndata: [DONE]\n\n']);
    expect(seen.writes).toHaveLength(2);
    expect(seen.writes[1]).toBe('29\r\ndata: finish\n\ndata: usage\n\ndata: [DONE]\n\n\r\n0\r\n\r\n');
  });

  it('ENGINE-SSE-4: an event is not held for the next turn: the client reads it before the next is sent', async () => {
    let stream: SseStream | undefined;
    const { port } = await serve((s) => {
      stream = s;
      s.send({ data: 'one' });
    });
    const got: string[] = [];
    const raw = await rawGet(port, (all) => {
      const chunks = all.includes('\r\n\r\n') ? httpChunks(all) : [];
      // Each event is sent only once the client read the one before: a held event never arrives.
      if (chunks.length > got.length) {
        got.push(...chunks.slice(got.length));
        if (got.length === 1) setTimeout(() => stream?.send({ data: 'two' }), 5);
        else if (got.length === 2) setImmediate(() => stream?.close({ data: 'three' }));
      }
    });
    expect(httpChunks(raw)).toEqual(['data: one\n\n', 'data: two\n\n', 'data: three\n\n']);
  });

  it('ENGINE-SSE-6: the stream listens to the response, not the request signal; a client that goes away ends it once', async () => {
    const added = vi.spyOn(AbortSignal.prototype, 'addEventListener');
    restore.push(() => added.mockRestore());
    let requestSignal: AbortSignal | undefined;
    let stream: SseStream | undefined;
    const closed = vi.fn();
    const hono = new Hono();
    hono.get('/s', (c) => {
      requestSignal = c.req.raw.signal;
      const calls = added.mock.calls.length;
      const opened = openRouteSseStream(c, { heartbeatMs: 0, signal: requestSignal });
      stream = opened.stream;
      stream.onClose(closed);
      stream.send({ data: 'first' });
      // No listener on the request's own signal: the response's 'close' ends the stream.
      expect(added.mock.instances.slice(calls)).not.toContain(requestSignal);
      return opened.response;
    });
    const server = createAdaptorServer({ fetch: hono.fetch }) as Server;
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    restore.push(
      () =>
        new Promise<void>((resolve) => {
          server.closeAllConnections();
          server.close(() => resolve());
        }),
    );
    const controller = new AbortController();
    const response = await fetch(`http://127.0.0.1:${(server.address() as AddressInfo).port}/s`, {
      signal: controller.signal,
    });
    const reader = response.body!.getReader();
    expect(new TextDecoder().decode((await reader.read()).value)).toBe('data: first\n\n');
    controller.abort();
    await vi.waitFor(() => expect(closed).toHaveBeenCalledTimes(1), { timeout: 10_000 });
    expect(requestSignal?.aborted).toBe(true);
    expect(stream?.closed).toBe(true);
    expect(stream?.send({ data: 'late' })).toBe(false);
  });

  it('ENGINE-SSE-5: a reader that does not read is dropped at the backlog limit, events of one turn counted', async () => {
    let stream: SseStream | undefined;
    let sent = 0;
    const { port } = await serve((s) => {
      stream = s;
    }, 64 * 1024);
    const socket = connect(port, '127.0.0.1', () =>
      socket.write('GET /s HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n'),
    );
    socket.on('error', () => {});
    await new Promise((resolve) => socket.once('connect', resolve));
    // The route has run once it handed the stream over (a loaded box can take longer than 50 ms).
    await vi.waitFor(() => expect(stream).toBeDefined(), { timeout: 10_000 });
    await new Promise((resolve) => setTimeout(resolve, 50));
    socket.pause();
    // All in one turn: nothing has reached the socket yet, the batch alone must hit the limit.
    while (stream?.send({ data: 'x'.repeat(16 * 1024) })) {
      sent++;
      if (sent > 1000) break;
    }
    expect(stream?.closed).toBe(true);
    expect(sent).toBeLessThanOrEqual(4);
    socket.destroy();
  });
});
