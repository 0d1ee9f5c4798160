/**
 * The session event stream with the real `eventsource` npm client (v4: the newest major that runs
 * on Node 20) against a real server on 127.0.0.1:0. Pins:
 * - the client connects with a bearer (through its `fetch` option) and receives published events;
 * - after the connection drops, it reconnects by itself sending Last-Event-ID and receives exactly
 *   the events it missed, then live ones — each bus event once;
 * - when the missed events fell out of the retained ring, it gets `resync` and then every missed
 *   event from the session event log;
 * - include_snapshot works through the client for 1, true, yes and on;
 * - a 401 stops the client (no reconnect loop).
 */
import { EventSource } from 'eventsource';
import { describe, expect, it } from 'vitest';
import type { App } from '../../src/app';
import { startHttpServer } from '../../src/surfaces/http/server';
import { reply } from '../helpers/fake-provider';
import { makeTestApp } from '../helpers/make-test-app';
import { TOKEN as COMPAT_TOKEN, compatServer } from './compat-helpers';

const TOKEN = 'eventsource-token-123';

interface Received {
  type: string;
  id: string;
  data: any;
}

const BUS_TYPES = ['session.created', 'tick', 'session.deleted'];
const SYNTHETIC = ['connected', 'resync', 'shutdown', 'adaptive_orchestration.genome'];

async function serve(app: App) {
  const server = await startHttpServer({
    config: app.config,
    flags: { port: 0, token: TOKEN },
    createApp: async () => app,
    http: { sseHeartbeatMs: 0, sseRetryMs: 50 },
  });
  return server;
}

/**
 * An EventSource whose connections the test can cut (as a network drop would) and whose next
 * connection can be held back until the test has published what the client should miss.
 */
function client(url: string, options: { token?: string } = {}) {
  const received: Received[] = [];
  const requests: { lastEventId: string | null }[] = [];
  let cut: (() => void) | undefined;
  let hold: Promise<void> | undefined;
  const source = new EventSource(url, {
    fetch: async (input, init) => {
      const headers = new Headers(init?.headers);
      requests.push({ lastEventId: headers.get('last-event-id') });
      if (hold) await hold;
      if (options.token ?? TOKEN) headers.set('authorization', `Bearer ${options.token ?? TOKEN}`);
      const controller = new AbortController();
      const signal = init?.signal ? AbortSignal.any([init.signal, controller.signal]) : controller.signal;
      cut = () => controller.abort(new Error('network drop'));
      return fetch(input, { ...init, headers, signal });
    },
  });
  for (const type of [...BUS_TYPES, ...SYNTHETIC]) {
    source.addEventListener(type, (event) => {
      received.push({ type, id: event.lastEventId, data: JSON.parse(event.data) });
    });
  }
  const waitFor = async (predicate: () => boolean, what: string, timeoutMs = 15_000) => {
    const deadline = Date.now() + timeoutMs;
    while (!predicate()) {
      if (Date.now() > deadline)
        throw new Error(`timed out waiting for ${what}; got ${JSON.stringify(received.map((r) => r.type))}`);
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
  };
  return {
    source,
    received,
    requests,
    waitFor,
    /** Drop the current connection; the next one waits for `release`. */
    drop() {
      let release!: () => void;
      hold = new Promise((resolve) => {
        release = resolve;
      });
      cut?.();
      return () => {
        hold = undefined;
        release();
      };
    },
    busEvents: () => received.filter((r) => BUS_TYPES.includes(r.type)),
  };
}

describe('SSE session events with the eventsource client', () => {
  it('EVT-08: receives, disconnects, reconnects with Last-Event-ID and gets exactly the missed events', async () => {
    const app = await makeTestApp();
    const server = await serve(app);
    const session = await app.sessions.create();
    const es = client(`${server.url}/v1/sessions/${session.id}/events`);
    try {
      await es.waitFor(() => es.busEvents().length === 1, 'the replayed session.created');
      expect(es.received[0]).toMatchObject({ type: 'connected', data: { session_id: session.id } });
      const before = await Promise.all([1, 2].map((n) => app.bus.publishStored(session.id, 'tick', { n })));
      await es.waitFor(() => es.busEvents().length === 3, 'two live ticks');

      const release = es.drop();
      await es.waitFor(() => server.streams.size === 0, 'the server to see the drop');
      const missed = await Promise.all(
        [3, 4, 5].map((n) => app.bus.publishStored(session.id, 'tick', { n })),
      );
      release();
      await es.waitFor(() => es.busEvents().length === 6, 'the three missed ticks');
      const after = await app.bus.publishStored(session.id, 'tick', { n: 6 });
      await es.waitFor(() => es.busEvents().length === 7, 'a live tick after the reconnect');

      expect(es.requests.map((r) => r.lastEventId)).toEqual([null, String(before[1].id)]);
      const reconnect = es.received.filter((r) => r.type === 'connected')[1];
      expect(reconnect.data.replay).toEqual({
        source: 'ring',
        after_id: before[1].id,
        count: 3,
        last_event_id_received: before[1].id,
      });
      const ticks = es.busEvents().filter((r) => r.type === 'tick');
      expect(ticks.map((r) => [Number(r.id), r.data.n])).toEqual(
        [...before, ...missed, after].map((e, i) => [e.id, i + 1]),
      );
    } finally {
      es.source.close();
      await server.close();
    }
  });

  it('EVT-09: resyncs from the session event log when the missed events left the ring', async () => {
    const app = await makeTestApp({ config: { services: { http: { event_ring_size: 3 } } } });
    const server = await serve(app);
    const session = await app.sessions.create();
    const es = client(`${server.url}/v1/sessions/${session.id}/events`);
    try {
      const first = await app.bus.publishStored(session.id, 'tick', { n: 1 });
      await es.waitFor(() => es.busEvents().some((r) => r.data.n === 1), 'tick 1');
      const release = es.drop();
      await es.waitFor(() => server.streams.size === 0, 'the server to see the drop');
      const missed = await Promise.all(
        [2, 3, 4, 5, 6].map((n) => app.bus.publishStored(session.id, 'tick', { n })),
      );
      expect((await app.bus.retained(session.id)).map((e) => e.payload.n)).toEqual([4, 5, 6]);
      release();
      await es.waitFor(
        () => es.busEvents().filter((r) => r.type === 'tick').length === 6,
        'the missed ticks',
      );

      expect(es.requests.at(-1)?.lastEventId).toBe(String(first.id));
      const afterReconnect = es.received.slice(es.received.findLastIndex((r) => r.type === 'connected'));
      expect(afterReconnect.map((r) => r.type)).toEqual([
        'connected',
        'resync',
        'tick',
        'tick',
        'tick',
        'tick',
        'tick',
      ]);
      expect(afterReconnect[1].data).toMatchObject({
        reason: 'last_event_id_evicted',
        source: 'log',
        count: 5,
      });
      expect(afterReconnect.slice(2).map((r) => Number(r.id))).toEqual(missed.map((e) => e.id));
    } finally {
      es.source.close();
      await server.close();
    }
  });

  for (const value of ['1', 'true', 'yes', 'on']) {
    it(`EVT-03: include_snapshot=${value} sends the resync event through the client`, async () => {
      const app = await makeTestApp();
      const server = await serve(app);
      const session = await app.sessions.create();
      const es = client(`${server.url}/v1/sessions/${session.id}/events?include_snapshot=${value}`);
      try {
        await es.waitFor(() => es.busEvents().length === 1, 'the replay');
        expect(es.received.map((r) => r.type)).toEqual([
          'connected',
          'adaptive_orchestration.genome',
          'session.created',
        ]);
        expect(es.received[1].data).toMatchObject({ session_id: session.id, action: 'unknown' });
      } finally {
        es.source.close();
        await server.close();
      }
    });
  }

  it('stops on 401 instead of reconnecting forever', async () => {
    const app = await makeTestApp();
    const server = await serve(app);
    const session = await app.sessions.create();
    const es = client(`${server.url}/v1/sessions/${session.id}/events`, { token: 'wrong-token-000000' });
    try {
      const error = await new Promise<{ code?: number }>((resolve) => {
        es.source.onerror = (event) => resolve(event as { code?: number });
      });
      expect(error.code).toBe(401);
      await new Promise((resolve) => setTimeout(resolve, 200));
      expect(es.source.readyState).toBe(EventSource.CLOSED);
      expect(es.requests).toHaveLength(1);
    } finally {
      es.source.close();
      await server.close();
    }
  });

  it('EVT-01: the eventsource client receives a real run: deltas, tool calls and the finish', async () => {
    const { url, app } = await compatServer([reply().toolCall('ls', {}), reply().text('Listed.')]);
    const session = await app.sessions.create();
    const received: { type: string; data: any }[] = [];
    const source = new EventSource(`${url}/v1/sessions/${session.id}/events?attach=0`, {
      fetch: (input, init) => {
        const headers = new Headers(init?.headers);
        headers.set('authorization', `Bearer ${COMPAT_TOKEN}`);
        return fetch(input, { ...init, headers });
      },
    });
    const types = [
      'connected',
      'run.started',
      'message.delta',
      'tool.started',
      'tool.finished',
      'run.finished',
    ];
    for (const type of types) {
      source.addEventListener(type, (event) => received.push({ type, data: JSON.parse(event.data) }));
    }
    try {
      await waitUntil(() => received.some((r) => r.type === 'connected'), 'connected');
      expect(app.permissions.attachments(session.id)).toEqual([]);
      const sent = await app.agent.send({ sessionId: session.id, prompt: 'list files' });
      await waitUntil(() => received.some((r) => r.type === 'run.finished'), 'run.finished');
      const seen = received.map((r) => r.type);
      expect(seen.indexOf('run.started')).toBeLessThan(seen.indexOf('tool.started'));
      expect(seen.indexOf('tool.finished')).toBeLessThan(seen.lastIndexOf('message.delta'));
      expect(received.find((r) => r.type === 'tool.started')?.data).toMatchObject({
        tool: 'ls',
        run_id: sent.run_id,
      });
      expect(
        received
          .filter((r) => r.type === 'message.delta')
          .map((r) => r.data.delta)
          .join(''),
      ).toBe('Listed.');
      expect(received.at(-1)).toMatchObject({
        type: 'run.finished',
        data: { run_id: sent.run_id, status: 'completed' },
      });
    } finally {
      source.close();
    }
  });
});

async function waitUntil(probe: () => boolean, what: string) {
  const deadline = Date.now() + 15_000;
  while (!probe()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
