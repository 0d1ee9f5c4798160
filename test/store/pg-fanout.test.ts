/**
 * Session events fan out across nodes (issue 18): two buses on two pools of one PostgreSQL
 * database, each following the other's appends through LISTEN/NOTIFY (src/events/pg-notify.ts),
 * behave as one bus for subscribers of a session: every event once, in id order, on both; a killed
 * listening connection loses nothing; a replay after an id published on the other node is exact.
 */
import { EventSource } from 'eventsource';
import { afterEach, describe, expect, it } from 'vitest';
import type { App } from '../../src/app';
import { createEventBus, type EventBus, type SessionEvent } from '../../src/events/bus';
import { createPostgresEventStore } from '../../src/events/pg-event-store';
import { followOtherNodes } from '../../src/events/pg-notify';
import type { SqlClient } from '../../src/store/postgres/client';
import { startHttpServer } from '../../src/surfaces/http/server';
import { makeTestApp, testClock } from '../helpers/make-test-app';
import { postgresForFile, twoNodes } from '../helpers/postgres';
import { until } from '../helpers/until';

const pg = postgresForFile();

const settle = () => new Promise((r) => setTimeout(r, 300));
const ids = (events: SessionEvent[]) => events.map((e) => e.id);
const ascending = (list: number[]) => list.every((id, i) => i === 0 || id > list[i - 1]);

describe.skipIf(!pg.available)('STORE-PG-fanout: session events across two nodes', () => {
  const closers: (() => Promise<void> | void)[] = [];
  afterEach(async () => {
    for (const close of closers.splice(0).reverse()) await close();
  });

  /** A node: a bus on the PostgreSQL log of its own pool, following the other nodes' appends. */
  async function node(sql: SqlClient) {
    const store = createPostgresEventStore({ sql });
    const bus = createEventBus({ store: () => store, clock: testClock(), ringSize: 100, shared: true });
    const following = followOtherNodes(bus, sql, { reconnectDelayMs: 50 });
    closers.push(() => bus.close());
    closers.push(() => following.stop());
    await following.started;
    return { bus, store };
  }

  async function cluster() {
    const nodes = await twoNodes(pg.cluster());
    closers.push(() => nodes.close());
    const a = await node(nodes.sql);
    const b = await node(nodes.other);
    return { a, b, sqlB: nodes.other };
  }

  /** A subscriber of one session whose ring is loaded (subscribe, then lastId: as the SSE route does). */
  async function watch(bus: EventBus, sessionId: string) {
    const seen: SessionEvent[] = [];
    bus.subscribe(sessionId, (event) => seen.push(event));
    await bus.lastId(sessionId);
    return seen;
  }

  it('STORE-PG-fanout: a subscriber on B sees the events published on A, once, in order', async () => {
    const { a, b } = await cluster();
    const onB = await watch(b.bus, 's');
    const sent: SessionEvent[] = [];
    for (let n = 0; n < 10; n++) sent.push(await a.bus.publishStored('s', 'tick', { n }));
    await a.bus.publishStored('other', 'tick', { n: -1 });
    await until(() => onB.length >= 10, "B to deliver A's events");
    await settle();
    expect(onB).toEqual(sent);
    expect(await b.bus.lastId('s')).toBe(sent[9].id);
    expect(await b.bus.retained('s')).toEqual(sent);
  });

  it('STORE-PG-fanout: interleaved publishes on A and B reach both in the same id order, each once', async () => {
    const { a, b } = await cluster();
    const onA = await watch(a.bus, 's');
    const onB = await watch(b.bus, 's');
    // '*' listeners are node-local observers: they see this node's events only.
    const starB: SessionEvent[] = [];
    b.bus.subscribe('*', (event) => starB.push(event));
    for (let n = 0; n < 30; n++) (n % 3 === 0 ? b : a).bus.publish('s', 'tick', { n });
    // A burst on B right behind one on A: B's own event comes after A's, by id.
    await a.bus.publishStored('s', 'tick', { n: 30 });
    await b.bus.publishStored('s', 'tick', { n: 31 });
    await Promise.all([a.bus.flush(), b.bus.flush()]);
    await until(() => onA.length >= 32 && onB.length >= 32, 'both nodes to deliver every event');
    await settle();
    const log = (await a.store.after('s', 0)).map((row) => row.id);
    expect(log).toHaveLength(32);
    expect(ids(onA)).toEqual(log);
    expect(ids(onB)).toEqual(log);
    expect(ascending(log)).toBe(true);
    expect(onB.map((e) => e.payload)).toEqual(onA.map((e) => e.payload));
    expect(starB.map((e) => e.payload.n)).toEqual([0, 3, 6, 9, 12, 15, 18, 21, 24, 27, 31]);
  });

  it('STORE-PG-fanout: B delivers every event once after its listening connection is killed', async () => {
    const { a, b, sqlB } = await cluster();
    const onB = await watch(b.bus, 's');
    const sent: SessionEvent[] = [];
    for (let n = 0; n < 3; n++) sent.push(await a.bus.publishStored('s', 'tick', { n }));
    await until(() => onB.length === 3, 'the first events');
    const pids = await sqlB.query<{ pid: number }>(
      "SELECT pid FROM pg_stat_activity WHERE application_name = 'svc-listen' AND datname = current_database()",
    );
    expect(pids.length).toBe(2);
    // Kill both listeners' connections (A's and B's) while A keeps publishing.
    const publishing = (async () => {
      for (let n = 3; n < 20; n++) {
        sent.push(await a.bus.publishStored('s', 'tick', { n }));
        await new Promise((r) => setTimeout(r, 5));
      }
    })();
    for (const { pid } of pids) await sqlB.query('SELECT pg_terminate_backend($1)', [pid]);
    await publishing;
    await until(() => onB.length >= 20, 'B to catch up after reconnecting');
    await settle();
    expect(onB).toEqual(sent);
    const after = await sqlB.query<{ pid: number }>(
      "SELECT pid FROM pg_stat_activity WHERE application_name = 'svc-listen' AND datname = current_database()",
    );
    expect(after.map((r) => r.pid).filter((pid) => pids.some((p) => p.pid === pid))).toEqual([]);
  });

  it('STORE-PG-fanout: replay on B after an id published on A is exact, even with a stale ring on B', async () => {
    const { a, b } = await cluster();
    // B knows the session (its ring is in memory) but nobody listens there: no notice reads it.
    await b.bus.publishStored('s', 'tick', { n: 0 });
    const sent: SessionEvent[] = [];
    for (let n = 1; n <= 5; n++) sent.push(await a.bus.publishStored('s', 'tick', { n }));
    expect(await b.bus.lastId('s')).toBe(sent[4].id);
    const replay = await b.bus.replay('s', sent[1].id);
    expect(replay.events).toEqual(sent.slice(2));
    expect((await b.bus.replay('s', sent[4].id)).events).toEqual([]);
    // A fresh bus on B's pool (a node that restarted) too.
    const fresh = createEventBus({
      store: () => b.store,
      clock: testClock(),
      ringSize: 100,
      shared: true,
    });
    closers.push(() => fresh.close());
    expect((await fresh.replay('s', sent[0].id)).events).toEqual(sent.slice(1));
    const next = await b.bus.publishStored('s', 'tick', { n: 6 });
    expect((await a.bus.replay('s', sent[4].id)).events).toEqual([next]);
  });

  it('STORE-PG-fanout: the log tells an append the session id before it', async () => {
    const { a, b } = await cluster();
    const append = a.store.append;
    if (!append) throw new Error('the PostgreSQL log has append');
    const first = await append('s', 't', '{}', 1);
    expect(first.previous).toBe(0);
    const other = await b.store.insert('s', 't', '{}', 2);
    await b.store.insert('x', 't', '{}', 3);
    const third = await append('s', 't', '{}', 4);
    expect(third.previous).toBe(other);
  });
});

describe.skipIf(!pg.available)('STORE-PG-fanout: SSE across two Apps on one database', () => {
  const TOKEN = 'fanout-token-123';

  async function serve(app: App) {
    return await startHttpServer({
      config: app.config,
      flags: { port: 0, token: TOKEN },
      createApp: async () => app,
      http: { sseHeartbeatMs: 0, sseRetryMs: 50 },
    });
  }

  it('STORE-PG-fanout: an SSE client on B gets the events published on A, from the session’s start as on A; reconnecting to A replays exactly', async () => {
    const nodes = await twoNodes(pg.cluster());
    const appA = await makeTestApp({ postgres: nodes.sql });
    const appB = await makeTestApp({ postgres: nodes.other });
    const serverA = await serve(appA);
    const serverB = await serve(appB);
    const received: { type: string; id: number; n?: number }[] = [];
    const requests: { url: string; lastEventId: string | null }[] = [];
    let target = serverB.url;
    let cut: (() => void) | undefined;
    let hold: Promise<void> | undefined;
    let source: EventSource | undefined;
    try {
      const session = await appA.sessions.create();
      // session.created is stored before B's stream opens: B's ring starts after it (as a node
      // that restarted), yet B's stream starts with it, read from the log, as A's would.
      await appA.bus.flush();
      const created = (await appA.bus.replay(session.id, 0)).events;
      expect(created.map((e) => e.type)).toEqual(['session.created']);
      const path = `/v1/sessions/${session.id}/events`;
      source = new EventSource(`${serverB.url}${path}`, {
        // Each connection goes to the node `target` names: the load balancer of a cluster.
        fetch: async (_input, init) => {
          const headers = new Headers(init?.headers);
          // Recorded once held: a loaded box may retry (50 ms) before B has seen the drop and
          // `target` moved to A; the request goes where `target` names after the hold.
          if (hold) await hold;
          requests.push({ url: target, lastEventId: headers.get('last-event-id') });
          headers.set('authorization', `Bearer ${TOKEN}`);
          const controller = new AbortController();
          const signal = init?.signal ? AbortSignal.any([init.signal, controller.signal]) : controller.signal;
          cut = () => controller.abort(new Error('network drop'));
          return fetch(`${target}${path}`, { ...init, headers, signal });
        },
      });
      for (const type of ['connected', 'resync', 'session.created', 'tick']) {
        source.addEventListener(type, (event) => {
          const data = JSON.parse(event.data) as { n?: number };
          received.push({ type, id: Number(event.lastEventId), n: data.n });
        });
      }
      const ticks = () => received.filter((r) => r.type === 'tick');
      await until(() => received.some((r) => r.type === 'connected'), "B's stream to open");

      const live = [];
      for (const n of [1, 2, 3]) live.push(await appA.bus.publishStored(session.id, 'tick', { n }));
      await until(() => ticks().length === 3, "A's ticks through B's stream");

      // Drop the stream; the next connection goes to A, held until A has published what it missed.
      let release!: () => void;
      hold = new Promise((resolve) => {
        release = resolve;
      });
      cut?.();
      await until(() => serverB.streams.size === 0, 'B to see the drop');
      target = serverA.url;
      const missed = [];
      for (const n of [4, 5]) missed.push(await appA.bus.publishStored(session.id, 'tick', { n }));
      missed.push(await appB.bus.publishStored(session.id, 'tick', { n: 6 }));
      hold = undefined;
      release();
      await until(() => ticks().length === 6, 'the missed ticks from A');
      const after = await appB.bus.publishStored(session.id, 'tick', { n: 7 });
      await until(() => ticks().length === 7, "a live tick B published, through A's stream");
      await settle();

      expect(requests.map((r) => [r.url, r.lastEventId])).toEqual([
        [serverB.url, null],
        [serverA.url, String(live[2].id)],
      ]);
      expect(ticks().map((r) => [r.id, r.n])).toEqual(
        [...live, ...missed, after].map((e, i) => [e.id, i + 1]),
      );
      expect(received.filter((r) => r.type === 'session.created')).toEqual([
        { type: 'session.created', id: created[0]!.id, n: undefined },
      ]);
      expect(received.slice(0, 2).map((r) => r.type)).toEqual(['connected', 'session.created']);
      const reconnect = received.filter((r) => r.type === 'connected')[1];
      expect(reconnect.id).toBe(live[2].id);
    } finally {
      source?.close();
      await serverB.close();
      await serverA.close();
      await appB.close();
      await appA.close();
      await nodes.close();
    }
  });
});
