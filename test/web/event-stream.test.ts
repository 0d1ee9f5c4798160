/**
 * The web UI's event stream outside the browser (src/surfaces/web/src/events.ts) against a local
 * SSE server. Pins WEB-SILENT-1: a live stream whose connection goes silent past three of the
 * heartbeats the server announced (a laptop asleep, a network gone: no bytes and no close) is not
 * "live" for ever: it is given up with the reason and opened again, resuming with Last-Event-ID,
 * and a connection that went live starts the back-off over.
 * WEB-SILENT-2: heartbeats alone keep it (nothing but `: ping` comments for longer than the
 * silence allowed is not silence).
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, beforeEach, describe, expect, it, onTestFinished, vi } from 'vitest';
import { type Api, createApi } from '../../src/surfaces/web/src/api';
import { openEventStream, type StreamStatus } from '../../src/surfaces/web/src/events';

// The fetched stream's silence and heartbeat handling: Node 22 and 24 have a global WebSocket, which
// the page would try first (./event-socket.test.ts covers that transport); this server speaks only
// SSE and counts its connections.
beforeEach(() => {
  vi.stubGlobal('WebSocket', undefined);
});
afterEach(() => {
  vi.unstubAllGlobals();
});

/** A local server whose `/v1/sessions/s1/events` answers with `serve` (connections counted from 1). */
async function sseServer(
  serve: (res: ServerResponse, connection: number, req: IncomingMessage) => void,
): Promise<Api> {
  let connections = 0;
  const open = new Set<ServerResponse>();
  const server = createServer((req, res) => {
    if (!req.url?.endsWith('/events')) {
      res.writeHead(404).end();
      return;
    }
    open.add(res);
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    serve(res, ++connections, req);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  onTestFinished(
    () =>
      new Promise<void>((resolve) => {
        for (const res of open) res.destroy();
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  );
  const { port } = server.address() as AddressInfo;
  return createApi({ base: `http://127.0.0.1:${port}/`, token: () => 't' });
}

/** Opens the stream; `reached` resolves once `until` holds for the statuses seen so far. */
function watch(api: Api, until: (seen: StreamStatus[]) => boolean) {
  const seen: StreamStatus[] = [];
  const events: number[] = [];
  let done!: () => void;
  const reached = new Promise<void>((resolve) => {
    done = resolve;
  });
  const stream = openEventStream({
    api,
    sessionId: 's1',
    onEvent: (event) => events.push(event.id),
    onStatus(status) {
      seen.push(status);
      if (until(seen)) done();
    },
    minDelayMs: 50,
    maxDelayMs: 200,
  });
  onTestFinished(() => stream.close());
  return { seen, events, reached };
}

const connected = (lastEventId: number, heartbeatMs: number) =>
  `id: ${lastEventId}\nevent: connected\ndata: ${JSON.stringify({ type: 'connected', last_event_id: lastEventId, heartbeat_ms: heartbeatMs })}\n\n`;
const event = (id: number) =>
  `id: ${id}\nevent: message.created\ndata: ${JSON.stringify({ type: 'message.created', session_id: 's1', id })}\n\n`;

describe('web UI event stream', () => {
  it('WEB-SILENT-1: a live stream silent past three heartbeats is given up, says why, and resumes with Last-Event-ID', {
    timeout: 60_000,
  }, async () => {
    const resumedFrom: (string | undefined)[] = [];
    // "A heartbeat every 100 ms", one event, then nothing and no close (the 5 s floor applies).
    const api = await sseServer((res, connection, req) => {
      resumedFrom.push(req.headers['last-event-id'] as string | undefined);
      if (connection === 1) res.write(connected(0, 100) + event(1));
      else if (connection === 2) res.write(connected(1, 100) + event(2));
      else res.write(connected(2, 100));
    });
    const lives = (seen: StreamStatus[]) => seen.filter((s) => s.state === 'live').length;
    const { seen, events, reached } = watch(api, (all) => lives(all) >= 3);
    // Bounded: without the watchdog the first connection stays "live" for ever.
    await Promise.race([reached, new Promise((resolve) => setTimeout(resolve, 40_000))]);
    expect(seen.map((s) => s.state)).toEqual([
      ...['connecting', 'live', 'reconnecting'],
      ...['connecting', 'live', 'reconnecting'],
      ...['connecting', 'live'],
    ]);
    // Each connection went live: the back-off starts over each time (not 1, 2, 4, … waits long).
    expect(seen.filter((s) => s.state === 'reconnecting').map((s) => s.attempt)).toEqual([1, 1]);
    expect(seen.find((s) => s.state === 'reconnecting')).toMatchObject({
      reason: 'nothing came from the server for 5 s, not even its heartbeat (the connection died silently)',
    });
    expect(resumedFrom).toEqual([undefined, '1', '2']);
    await expect.poll(() => events).toEqual([1, 2]);
  });

  it('WEB-SILENT-2: heartbeat comments alone keep a quiet stream live', { timeout: 60_000 }, async () => {
    const timers: NodeJS.Timeout[] = [];
    onTestFinished(() => {
      for (const timer of timers) clearInterval(timer);
    });
    let connections = 0;
    const api = await sseServer((res) => {
      connections++;
      res.write(connected(0, 100));
      let n = 0;
      timers.push(setInterval(() => res.write(`: ping ${++n}\n\n`), 100));
    });
    const { seen, reached } = watch(api, (all) => all.some((s) => s.state === 'live'));
    await reached;
    // Well past the 5 s allowed for silence, with a ping every 100 ms: still the one connection.
    await new Promise((resolve) => setTimeout(resolve, 7_000));
    expect(seen.map((s) => s.state)).toEqual(['connecting', 'live']);
    expect(connections).toBe(1);
  });
});
