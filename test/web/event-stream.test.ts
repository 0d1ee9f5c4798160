/**
 * The web UI's event stream and API client outside the browser (src/surfaces/web/src/events.ts,
 * api.ts), against a local SSE server. Pins:
 * - a live stream that goes silent past its heartbeats is not "live": it is given up and opened
 *   again, with the reason;
 * - a `dropped` event's reason and message reach the status (`stream_limit` named as such), and a
 *   refused stream keeps backing off;
 * - a call the server does not answer in time fails with `timeout`, naming the likely cause (too
 *   many svc tabs) and what to do.
 */
import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, expect, it, onTestFinished } from 'vitest';
import { type Api, ApiError, createApi } from '../../src/surfaces/web/src/api';
import { openEventStream, type StreamStatus } from '../../src/surfaces/web/src/events';

/** A local server whose `/v1/sessions/s1/events` answers with `serve`. */
async function sseServer(serve: (res: ServerResponse, connection: number) => void): Promise<Api> {
  let connections = 0;
  const open = new Set<ServerResponse>();
  const server = createServer((req, res) => {
    if (!req.url?.endsWith('/events')) {
      res.writeHead(404).end();
      return;
    }
    open.add(res);
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    serve(res, ++connections);
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

/** Statuses until `until` holds for one (bounded by the test's timeout). */
function watch(api: Api, until: (status: StreamStatus, seen: StreamStatus[]) => boolean) {
  const seen: StreamStatus[] = [];
  let done!: () => void;
  const reached = new Promise<void>((resolve) => {
    done = resolve;
  });
  const stream = openEventStream({
    api,
    sessionId: 's1',
    onEvent() {},
    onStatus(status) {
      seen.push(status);
      if (until(status, seen)) done();
    },
    minDelayMs: 50,
    maxDelayMs: 200,
  });
  onTestFinished(() => stream.close());
  return { seen, reached };
}

const connected = (heartbeatMs: number) =>
  `id: 0\nevent: connected\ndata: ${JSON.stringify({ type: 'connected', last_event_id: 0, heartbeat_ms: heartbeatMs })}\n\n`;

describe('web event stream', () => {
  it('gives up a live stream that stays silent past its heartbeats, and says why', {
    timeout: 30_000,
  }, async () => {
    // The server says "heartbeat every 100 ms", then sends nothing and never closes.
    const api = await sseServer((res) => res.write(connected(100)));
    const { seen, reached } = watch(api, (s) => s.state === 'reconnecting');
    await reached;
    expect(seen.map((s) => s.state).slice(0, 3)).toEqual(['connecting', 'live', 'reconnecting']);
    const gone = seen.find((s) => s.state === 'reconnecting');
    expect(gone).toMatchObject({ reason: expect.stringMatching(/nothing came from the server for 5 s/) });
  });

  it('shows a dropped stream’s reason and keeps backing off while it is refused', {
    timeout: 30_000,
  }, async () => {
    const api = await sseServer((res) => {
      res.end(
        `id: 0\nevent: dropped\ndata: ${JSON.stringify({
          type: 'dropped',
          session_id: 's1',
          reason: 'stream_limit',
          message:
            '16 event streams are open for this session already ([services.http] sse_max_streams_per_session) and none is behind; close one; reconnect with Last-Event-ID to resume',
        })}\n\n`,
      );
    });
    const refusals = (seen: StreamStatus[]) => seen.filter((s) => s.state === 'reconnecting');
    const { seen, reached } = watch(api, (_status, all) => refusals(all).length >= 4);
    await reached;
    const [first, ...rest] = refusals(seen) as Extract<StreamStatus, { state: 'reconnecting' }>[];
    expect(first.dropped).toEqual({
      reason: 'stream_limit',
      message:
        '16 event streams are open for this session already ([services.http] sse_max_streams_per_session) and none is behind; close one',
    });
    expect(first.reason).toMatch(/^the server dropped this stream: 16 event streams/);
    expect(seen.some((s) => s.state === 'live')).toBe(false);
    // Backing off: each wait at least as long as the one before, up to the cap.
    const waits = [first, ...rest].map((s) => s.inMs);
    expect(waits).toEqual([50, 100, 200, 200]);
  });

  it('fails a call the server does not answer with a timeout naming too many tabs', async () => {
    const hanging: typeof fetch = (_url, init) =>
      new Promise((_resolve, reject) =>
        init?.signal?.addEventListener('abort', () => reject(init.signal?.reason), { once: true }),
      );
    const api = createApi({
      base: 'http://127.0.0.1:1/',
      token: () => 't',
      fetch: hanging,
      timeoutMs: 1_000,
    });
    const error = await api.get('v1/sessions').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ApiError);
    expect((error as ApiError).code).toBe('timeout');
    expect((error as ApiError).message).toMatch(
      /^The svc server at http:\/\/127\.0\.0\.1:1\/ did not answer in 1 s; too many svc tabs open\? .*close some svc tabs/,
    );
  });
});
