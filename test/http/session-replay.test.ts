/**
 * The session event stream under load, against a real server on 127.0.0.1:0 (probe 82a):
 * - a reconnect with an old `Last-Event-ID` reads the log a page at a time (never more than
 *   `REPLAY_PAGE` rows a statement), and the replay is exact: every event once, in order, then the
 *   live ones without a gap;
 * - a client that stops reading stops the replay (the log is not read on for it) until it reads
 *   again, and then gets everything;
 * - past `sse_max_streams_per_session` the slowest (of equals, the oldest) stream of the session is
 *   dropped with a `dropped` event naming the limit; the others carry on;
 * - past `sse_max_buffered_bytes` the streams that do not read are dropped, a reading client of the
 *   same session gets every event and is not dropped.
 */
import { connect, type Socket } from 'node:net';
import type { Statement } from 'better-sqlite3';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { App } from '../../src/app';
import { startHttpServer } from '../../src/surfaces/http/server';
import { REPLAY_PAGE } from '../../src/surfaces/http/session-replay';
import { makeTestApp } from '../helpers/make-test-app';

const TOKEN = 'replay-token-123';
const cleanup: (() => Promise<void> | void)[] = [];

afterEach(async () => {
  for (const fn of cleanup.splice(0).reverse()) await fn();
  vi.restoreAllMocks();
});

async function serve(http: Record<string, unknown> = {}) {
  const app = await makeTestApp({ config: { services: { http: { event_ring_size: 10, ...http } } } });
  const server = await startHttpServer({
    config: app.config,
    flags: { port: 0, token: TOKEN },
    createApp: async () => app,
    http: { sseHeartbeatMs: 0 },
  });
  cleanup.push(() => server.close());
  const session = await app.sessions.create({ title: 'replay' });
  return { app, server, session, port: Number(new URL(server.url).port) };
}

/** The rows each read of a session's events after an id returned (SQLite statements). */
function countLogReads(app: App): number[] {
  const proto = Object.getPrototypeOf(app.db.prepare('SELECT 1')) as Statement;
  const original = proto.all;
  const reads: number[] = [];
  vi.spyOn(proto, 'all').mockImplementation(function (this: Statement, ...args: unknown[]) {
    const rows = original.apply(this, args as never) as unknown[];
    if (/FROM session_events WHERE session_id = \? AND id > \?/.test(this.source)) reads.push(rows.length);
    return rows;
  } as never);
  return reads;
}

/** A raw SSE client: the body so far (chunks decoded), the events parsed from it, pausable. */
function rawClient(port: number, path: string, lastEventId?: number) {
  let raw = '';
  let head = true;
  let text = '';
  let ended = false;
  /** The events parsed so far, and where in `text` the next one starts (parsed as chunks come). */
  const parsed: { event: string; id: number; data: string }[] = [];
  let parsedTo = 0;
  const parse = () => {
    for (;;) {
      const end = text.indexOf('\n\n', parsedTo);
      if (end < 0) return;
      const block = text.slice(parsedTo, end + 2);
      parsedTo = end + 2;
      const m = /event: ([^\n]+)\nid: (\d+)\n(?:retry: \d+\n)?((?:data: [^\n]*\n)+)\n$/.exec(block);
      if (m) parsed.push({ event: m[1], id: Number(m[2]), data: m[3].replace(/^data: /gm, '').trim() });
    }
  };
  /** Takes the complete chunks of `raw` into `text` (ASCII bodies: characters are bytes). */
  const decode = () => {
    if (head) {
      const end = raw.indexOf('\r\n\r\n');
      if (end < 0) return;
      raw = raw.slice(end + 4);
      head = false;
    }
    for (;;) {
      const eol = raw.indexOf('\r\n');
      if (eol < 0) return;
      const size = Number.parseInt(raw.slice(0, eol), 16);
      if (size === 0) {
        ended = true;
        return;
      }
      if (raw.length < eol + 2 + size + 2) return;
      text += raw.slice(eol + 2, eol + 2 + size);
      raw = raw.slice(eol + 2 + size + 2);
    }
  };
  const socket: Socket = connect(port, '127.0.0.1', () =>
    socket.write(
      `GET ${path} HTTP/1.1\r\nhost: 127.0.0.1\r\nauthorization: Bearer ${TOKEN}\r\n${
        lastEventId === undefined ? '' : `last-event-id: ${lastEventId}\r\n`
      }\r\n`,
    ),
  );
  socket.setEncoding('utf8');
  socket.on('data', (chunk: string) => {
    raw += chunk;
    decode();
    parse();
  });
  socket.on('close', () => {
    ended = true;
  });
  socket.on('error', () => {});
  cleanup.push(() => {
    socket.destroy();
  });
  const events = () => parsed;
  return { socket, events, text: () => text, ended: () => ended };
}

async function until(what: string, predicate: () => boolean, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!predicate()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

const pad = (n: number) => 'x'.repeat(n);

describe('session event replay in pages', () => {
  it('EVT-08 / EVT-REPLAY-1: an old Last-Event-ID is replayed from the log page by page, exactly, then live', async () => {
    const { app, session, port } = await serve();
    const created = (await app.bus.retained(session.id))[0];
    const total = 3 * REPLAY_PAGE + 7;
    const sent: number[] = [];
    for (let n = 0; n < total; n++) sent.push((await app.bus.publishStored(session.id, 'tick', { n })).id);
    const reads = countLogReads(app);
    const client = rawClient(port, `/v1/sessions/${session.id}/events?attach=0`, created.id);
    const ticks = () => client.events().filter((e) => e.event === 'tick');
    await until('the replay', () => ticks().length === total);
    const live = [];
    for (let n = total; n < total + 3; n++)
      live.push((await app.bus.publishStored(session.id, 'tick', { n })).id);
    await until('the live events', () => ticks().length === total + 3);

    const connected = client.events()[0];
    expect(connected.event).toBe('connected');
    expect(JSON.parse(connected.data).replay).toEqual({
      source: 'log',
      after_id: created.id,
      count: total,
      last_event_id_received: created.id,
    });
    expect(ticks().map((e) => e.id)).toEqual([...sent, ...live]);
    expect(ticks().map((e) => JSON.parse(e.data).n)).toEqual([...Array(total + 3).keys()]);
    // Never the whole log at once: a page a statement (the last events come from the ring).
    expect(reads.length).toBeGreaterThanOrEqual(3);
    expect(reads.reduce((a, b) => a + b, 0)).toBeLessThanOrEqual(total);
    expect(Math.max(...reads)).toBeLessThanOrEqual(REPLAY_PAGE);
  });

  it('EVT-REPLAY-2: a client that does not read stops the replay; it resumes when the client reads', async () => {
    const { app, session, port } = await serve();
    const created = (await app.bus.retained(session.id))[0];
    // ~24 MB of events: more than the socket buffers of a loopback connection take.
    const total = 12_000;
    const body = pad(2000);
    app.db.transaction(() => {
      for (let n = 0; n < total; n++) app.bus.publish(session.id, 'tick', { n, body });
    })();
    await app.bus.flush();
    const reads = countLogReads(app);
    const rowsRead = () => reads.reduce((a, b) => a + b, 0);
    const client = rawClient(port, `/v1/sessions/${session.id}/events?attach=0`, created.id);
    await until('the replay to start', () => client.text().includes('event: connected'));
    client.socket.pause();
    // Until the server stops reading the log for it (no new rows over 20 looks in a row).
    let last = -1;
    let still = 0;
    await until('the replay to stop', () => {
      still = rowsRead() === last ? still + 1 : 0;
      last = rowsRead();
      return still >= 20;
    });
    expect(rowsRead()).toBeLessThan(total);
    client.socket.resume();
    const ticks = () => client.events().filter((e) => e.event === 'tick');
    await until('the rest of the replay', () => ticks().length === total, 60_000);
    expect(ticks().map((e) => JSON.parse(e.data).n)).toEqual([...Array(total).keys()]);
    expect(Math.max(...reads)).toBeLessThanOrEqual(REPLAY_PAGE);
  });
});

describe('limits over the session event streams', () => {
  it('EVT-LIMIT-1: past sse_max_streams_per_session a new stream is dropped naming the limit, the up-to-date ones kept', async () => {
    const { app, session, server, port } = await serve({ sse_max_streams_per_session: 2 });
    const path = `/v1/sessions/${session.id}/events?attach=0`;
    const a = rawClient(port, path);
    await until('stream a', () => a.text().includes('event: session.created'));
    const b = rawClient(port, path);
    await until('stream b', () => b.text().includes('event: session.created'));
    const c = rawClient(port, path);
    await until('c to end', () => c.ended());
    const dropped = c.events().at(-1);
    expect(dropped?.event).toBe('dropped');
    expect(JSON.parse(dropped?.data ?? '{}')).toMatchObject({
      type: 'dropped',
      session_id: session.id,
      reason: 'stream_limit',
    });
    expect(JSON.parse(dropped?.data ?? '{}').message).toMatch(/sse_max_streams_per_session.*none is behind/);
    expect(server.streams.size).toBe(2);
    const tick = await app.bus.publishStored(session.id, 'tick', {});
    for (const other of [a, b]) await until('the tick', () => other.events().some((e) => e.id === tick.id));
    expect([a, b].some((s) => s.events().some((e) => e.event === 'dropped'))).toBe(false);
  });

  it('EVT-LIMIT-2: past sse_max_buffered_bytes the streams that do not read are dropped; a reader gets everything', async () => {
    const { app, session, server, port } = await serve({ sse_max_buffered_bytes: 2 * 1024 * 1024 });
    const path = `/v1/sessions/${session.id}/events?attach=0`;
    const stalled = [1, 2, 3, 4].map(() => rawClient(port, path));
    for (const s of stalled) {
      await until('a stalled stream', () => s.text().includes('event: session.created'));
      s.socket.pause();
    }
    const reader = rawClient(port, path);
    await until('the reader', () => reader.text().includes('event: session.created'));
    const total = 4000;
    const body = pad(4000);
    const sent: number[] = [];
    const readerTicks = () => {
      if (reader.ended()) throw new Error(`the reader was dropped: ${reader.events().at(-1)?.data}`);
      return reader.events().filter((e) => e.event === 'tick').length;
    };
    for (let n = 0; n < total; n++) {
      app.bus.publish(session.id, 'tick', { n, body });
      if (n % 200 === 199) {
        await app.bus.flush();
        // The reader reads: it takes each 800 KB before the next (on a loaded machine a reader in
        // this process could fall 2 MiB behind a burst and rightly be the stream over the budget).
        await until('the reader to keep up', () => readerTicks() === n + 1);
      }
    }
    await app.bus.flush();
    await until(
      'the reader to get every tick',
      () => reader.events().filter((e) => e.event === 'tick').length === total,
    );
    sent.push(
      ...reader
        .events()
        .filter((e) => e.event === 'tick')
        .map((e) => JSON.parse(e.data).n),
    );
    expect(sent).toEqual([...Array(total).keys()]);
    expect(reader.events().some((e) => e.event === 'dropped')).toBe(false);
    // 16 MB went to each stalled stream; the budget let at most 2 MiB wait, past the socket buffers.
    expect(server.streams.size).toBeLessThan(5);
    for (const s of stalled) s.socket.resume();
    await until(
      'the dropped streams to end',
      () => stalled.filter((s) => s.ended()).length === 4 - (server.streams.size - 1),
    );
    const reasons = stalled
      .filter((s) => s.ended())
      .map((s) => s.events().at(-1))
      .filter((e) => e?.event === 'dropped')
      .map((e) => JSON.parse(e?.data ?? '{}').reason);
    expect(reasons.length).toBeGreaterThan(0);
    expect(new Set(reasons)).toEqual(new Set(['buffer_budget']));
  });
});
