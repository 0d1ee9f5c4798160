import { describe, expect, it } from 'vitest';
import { testClock } from '../../test/helpers/make-test-app';
import { tmpWorkspace } from '../../test/helpers/tmp-workspace';
import { openDb } from '../store/db';
import { createEventBus, type EventBus, type EventFeed } from './bus';
import { createEventStore, type EventStore } from './event-store';

/**
 * The bus on the SQLite log (`immediate`: stored and delivered before publish returns), and on a
 * log that only answers asynchronously, a tick later (as PostgreSQL does): the same cases hold.
 */
const backends = {
  immediate: (db: ReturnType<typeof openDb>) => ({ db: () => db }),
  async: (db: ReturnType<typeof openDb>) => ({ store: () => slowStore(createEventStore(db)) }),
};

/** Every answer a macrotask later, so appends and reads interleave with publishes. */
function slowStore(inner: EventStore): EventStore {
  const later = <T>(fn: () => Promise<T>) =>
    new Promise<T>((resolve, reject) => setImmediate(() => fn().then(resolve, reject)));
  return {
    insert: (...args) => later(() => inner.insert(...args)),
    maxId: (sessionId) => later(() => inner.maxId(sessionId)),
    after: (sessionId, afterId) => later(() => inner.after(sessionId, afterId)),
  };
}

/**
 * `slowStore` with `appendAcross` (as on PostgreSQL: each session's highest id before the call's
 * first event of it), counting its calls' sizes.
 */
function batchingStore(inner: EventStore, sizes: number[]): EventStore {
  return {
    ...slowStore(inner),
    appendAcross: (events) =>
      new Promise((resolve, reject) =>
        setImmediate(async () => {
          try {
            sizes.push(events.length);
            const before = new Map<string, number>();
            const out = [];
            for (const e of events) {
              if (!before.has(e.sessionId)) before.set(e.sessionId, await inner.maxId(e.sessionId));
              const id = await inner.insert(e.sessionId, e.type, e.payload, e.createdAt);
              out.push({ id, previous: before.get(e.sessionId) as number });
            }
            resolve(out);
          } catch (error) {
            reject(error);
          }
        }),
      ),
  };
}

for (const [name, backend] of Object.entries(backends)) {
  describe(`session event bus (${name} log)`, () => {
    function setup(ringSize: number, maxRings?: number) {
      const db = openDb({ dataDir: tmpWorkspace() });
      const restart = () => createEventBus({ ...backend(db), clock: testClock(), ringSize, maxRings });
      return { db, bus: restart(), restart };
    }

    it('gives every event a monotonically increasing id and delivers it to session and * listeners', async () => {
      const { bus } = setup(10);
      const seen: string[] = [];
      bus.subscribe('s1', (e) => seen.push(`s1:${e.type}:${e.id}`));
      bus.subscribe('*', (e) => seen.push(`*:${e.session_id}`));
      const stored = [bus.publishStored('s1', 'a', {}), bus.publishStored('s2', 'b', {})];
      bus.publish('s1', 'c', { n: 1 });
      await bus.flush();
      const [a, b] = await Promise.all(stored);
      const c = (await bus.retained('s1'))[1];
      expect(a.id).toBeLessThan(b.id);
      expect(b.id).toBeLessThan(c.id);
      expect(seen).toEqual([`s1:a:${a.id}`, '*:s1', '*:s2', `s1:c:${c.id}`, '*:s1']);
    });

    it('delivers an event published by a listener after the event being delivered, to every listener', async () => {
      const { bus } = setup(10);
      const seen: string[] = [];
      bus.subscribe('*', (e) => {
        // Queued behind the event being delivered: stored and delivered after it.
        if (e.type === 'run.started') bus.publish('s1', 'reaction', {});
      });
      bus.subscribe('*', (e) => seen.push(`${e.type}:${e.id}`));
      const started = await bus.publishStored('s1', 'run.started', {});
      await bus.flush();
      const reaction = (await bus.retained('s1'))[1];
      expect(reaction.id).toBeGreaterThan(started.id);
      expect(await bus.lastId('s1')).toBe(reaction.id);
      expect(seen).toEqual([`run.started:${started.id}`, `reaction:${reaction.id}`]);
      expect((await bus.retained('s1')).map((e) => e.type)).toEqual(['run.started', 'reaction']);
    });

    it('replays from the ring after a known id', async () => {
      const { bus } = setup(10);
      const events = await Promise.all([1, 2, 3, 4].map((n) => bus.publishStored('s', 'tick', { n })));
      const replay = await bus.replay('s', events[1].id);
      expect(replay.source).toBe('ring');
      expect(replay.events.map((e) => e.payload.n)).toEqual([3, 4]);
    });

    it('resyncs from the database log when the id is older than the ring', async () => {
      const { bus } = setup(2);
      const events = await Promise.all([1, 2, 3, 4, 5].map((n) => bus.publishStored('s', 'tick', { n })));
      expect((await bus.retained('s')).map((e) => e.payload.n)).toEqual([4, 5]);
      const replay = await bus.replay('s', events[0].id);
      expect(replay.source).toBe('log');
      expect(replay.events.map((e) => e.payload.n)).toEqual([2, 3, 4, 5]);
    });

    it('survives a restart: a new bus serves old ids from the log', async () => {
      const { bus, restart } = setup(10);
      const first = await bus.publishStored('s', 'tick', { n: 1 });
      bus.publish('s', 'tick', { n: 2 });
      await bus.flush();
      const restarted = restart();
      expect(await restarted.lastId('s')).toBeGreaterThan(first.id);
      const replay = await restarted.replay('s', first.id);
      expect(replay).toMatchObject({ source: 'log' });
      expect(replay.events.map((e) => e.payload.n)).toEqual([2]);
      const next = await restarted.publishStored('s', 'tick', { n: 3 });
      expect(next.id).toBeGreaterThan(replay.events[0].id);
    });

    it('keeps delivering when one listener throws', async () => {
      const { bus } = setup(10);
      const got: number[] = [];
      bus.subscribe('s', () => {
        throw new Error('boom');
      });
      bus.subscribe('s', (e) => got.push(e.id));
      const e = await bus.publishStored('s', 'x', {});
      expect(got).toEqual([e.id]);
    });

    it('keeps only the most recently used rings in memory and reads a dropped one back as it was', async () => {
      const { bus } = setup(2, 2);
      const listened: number[] = [];
      bus.subscribe('live', (e) => listened.push(e.id));
      bus.publish('live', 'tick', { n: 0 });
      for (const id of ['a', 'b', 'c']) for (const n of [1, 2, 3]) bus.publish(id, 'tick', { n });
      await bus.flush();
      // 'a' left memory (least recently used, no listener); 'live' stayed although older.
      expect((await bus.retained('a')).map((e) => e.payload.n)).toEqual([2, 3]);
      expect(await bus.replay('a', 0)).toMatchObject({ source: 'log' });
      expect(await bus.replay('a', (await bus.retained('a'))[0].id)).toMatchObject({ source: 'ring' });
      expect((await bus.retained('live')).map((e) => e.payload.n)).toEqual([0]);
      expect((await bus.retained('b')).map((e) => e.payload.n)).toEqual([2, 3]);
      const next = await bus.publishStored('a', 'tick', { n: 4 });
      expect(await bus.lastId('a')).toBe(next.id);
      expect((await bus.retained('a')).map((e) => e.payload.n)).toEqual([3, 4]);
      expect(listened).toHaveLength(1);
    });

    it('forgets a session without listeners left', async () => {
      const { bus } = setup(10);
      const got: number[] = [];
      const off = bus.subscribe('s', (e) => got.push(e.id));
      off();
      const again = bus.subscribe('s', (e) => got.push(e.id));
      off();
      const e = await bus.publishStored('s', 'x', {});
      expect(got).toEqual([e.id]);
      again();
    });

    it('subscribe, replay after an id, then live: every event once, in id order, while publishing', async () => {
      const { bus } = setup(3);
      const before = await Promise.all([1, 2, 3, 4].map((n) => bus.publishStored('s', 'tick', { n })));
      // Published, not necessarily stored yet, while the subscriber connects.
      for (const n of [5, 6, 7]) bus.publish('s', 'tick', { n });
      let cursor = before[0].id;
      const got: number[] = [];
      const pending: { id: number; payload: Record<string, unknown> }[] = [];
      let live = false;
      const take = (e: { id: number; payload: Record<string, unknown> }) => {
        if (e.id <= cursor) return;
        cursor = e.id;
        got.push(e.payload.n as number);
      };
      bus.subscribe('s', (e) => (live ? take(e) : pending.push(e)));
      const replay = await bus.replay('s', cursor);
      for (const e of replay.events) take(e);
      live = true;
      for (const e of pending.splice(0)) take(e);
      bus.publish('s', 'tick', { n: 8 });
      await bus.flush();
      expect(got).toEqual([2, 3, 4, 5, 6, 7, 8]);
    });
  });
}

describe('session event bus on a failing log', () => {
  it('reports a failed append, does not deliver it, and keeps the queue going', async () => {
    const db = openDb({ dataDir: tmpWorkspace() });
    const inner = createEventStore(db);
    const errors: unknown[] = [];
    let fail = true;
    const store: EventStore = {
      insert: async (...args) => {
        if (fail) {
          fail = false;
          throw new Error('log down');
        }
        return await inner.insert(...args);
      },
      maxId: inner.maxId,
      after: inner.after,
    };
    const bus: EventBus = createEventBus({
      store: () => store,
      clock: testClock(),
      onError: (e) => errors.push(e),
    });
    const got: string[] = [];
    bus.subscribe('s', (e) => got.push(e.type));
    const lost = bus.publishStored('s', 'lost', {});
    bus.publish('s', 'kept', {});
    await expect(lost).rejects.toThrow('log down');
    await bus.flush();
    expect(got).toEqual(['kept']);
    expect(errors).toHaveLength(1);
    expect((await bus.replay('s', 0)).events.map((e) => e.type)).toEqual(['kept']);
  });
});

/**
 * Two buses on one log, as two nodes on PostgreSQL are (`shared`): a hand-driven feed stands for
 * LISTEN/NOTIFY (test/store/pg-fanout.test.ts runs the same on a real PostgreSQL).
 */
describe('session event bus on a log shared by two nodes', () => {
  function feed() {
    const subscribers: Parameters<EventFeed['subscribe']>[0][] = [];
    return {
      subscribe: (s: Parameters<EventFeed['subscribe']>[0]) => {
        subscribers.push(s);
        return () => subscribers.splice(subscribers.indexOf(s), 1);
      },
      notify: (sessionId: string, eventId: number) => {
        for (const s of subscribers) s.event({ sessionId, eventId });
      },
      resync: () => {
        for (const s of subscribers) s.resync();
      },
    };
  }
  function nodes() {
    const db = openDb({ dataDir: tmpWorkspace() });
    const store = slowStore(createEventStore(db));
    const node = () => createEventBus({ store: () => store, clock: testClock(), ringSize: 10, shared: true });
    return { a: node(), b: node() };
  }

  it("delivers another node's events to the session's listeners once, in id order, not to '*'", async () => {
    const { a, b } = nodes();
    const wake = feed();
    b.follow(wake);
    const onB: number[] = [];
    const starB: number[] = [];
    b.subscribe('s', (e) => onB.push(e.payload.n as number));
    b.subscribe('*', (e) => starB.push(e.payload.n as number));
    await b.lastId('s');
    const first = await a.publishStored('s', 'tick', { n: 1 });
    const second = await a.publishStored('s', 'tick', { n: 2 });
    wake.notify('s', first.id);
    wake.notify('s', second.id);
    wake.notify('s', second.id);
    await b.flush();
    expect(onB).toEqual([1, 2]);
    // B's own event after A's it has not been told of yet: A's first, then B's, by id.
    await a.publishStored('s', 'tick', { n: 3 });
    const own = await b.publishStored('s', 'tick', { n: 4 });
    expect(onB).toEqual([1, 2, 3, 4]);
    expect(starB).toEqual([4]);
    expect(await b.retained('s')).toEqual([first, second, expect.objectContaining({ id: own.id - 1 }), own]);
  });

  it("appends a burst of its own events in one call, after another node's event it was not told of", async () => {
    const db = openDb({ dataDir: tmpWorkspace() });
    const sizes: number[] = [];
    const store = batchingStore(createEventStore(db), sizes);
    const node = () => createEventBus({ store: () => store, clock: testClock(), ringSize: 10, shared: true });
    const [a, b] = [node(), node()];
    b.follow(feed());
    const onB: number[] = [];
    b.subscribe('s', (e) => onB.push(e.payload.n as number));
    await b.lastId('s');
    const first = await a.publishStored('s', 'tick', { n: 1 });
    const burst = await Promise.all([2, 3, 4, 5].map((n) => b.publishStored('s', 'tick', { n })));
    expect(sizes.some((n) => n > 1)).toBe(true);
    expect(onB).toEqual([1, 2, 3, 4, 5]);
    expect(burst.map((e) => e.id)).toEqual([first.id + 1, first.id + 2, first.id + 3, first.id + 4]);
    expect(await b.retained('s')).toEqual([first, ...burst]);
  });

  it('STORE-165: a shared log without appendAcross gets its events one at a time (no per-session appendMany path)', async () => {
    const db = openDb({ dataDir: tmpWorkspace() });
    const inner = slowStore(createEventStore(db));
    let many = 0;
    // A log of before migration 34's time, with only the per-session batch call: no store has that any more.
    const store = Object.assign(inner, {
      appendMany: async () => {
        many++;
        throw new Error('appendMany is not used');
      },
    });
    const node = createEventBus({ store: () => store, clock: testClock(), ringSize: 10, shared: true });
    const got: number[] = [];
    node.subscribe('s', (e) => got.push(e.payload.n as number));
    const burst = await Promise.all([1, 2, 3].map((n) => node.publishStored('s', 'tick', { n })));
    expect(many).toBe(0);
    expect(got).toEqual([1, 2, 3]);
    expect(burst.map((e) => e.id)).toEqual([burst[0].id, burst[0].id + 1, burst[0].id + 2]);
  });

  it('STORE-PG-742: `adopt` delivers a lost statement’s events found stored as this node’s, once, with their stored ids: read from the log (to the session and to `*`, another node’s event read with them to the session only), or taken into the ring already by a notice’s catch-up (to `*` only then); not stored: false, nothing delivered', async () => {
    const db = openDb({ dataDir: tmpWorkspace() });
    const store = slowStore(createEventStore(db));
    const node = createEventBus({ store: () => store, clock: testClock(), ringSize: 10, shared: true });
    const wake = feed();
    node.follow(wake);
    const onSession: string[] = [];
    const onEvery: string[] = [];
    node.subscribe('s', (e) => onSession.push(`${e.id} ${e.type}`));
    node.subscribe('*', (e) => onEvery.push(`${e.id} ${e.type}`));
    await node.lastId('s');
    // The lost statement's events (stamped 777), with another node's event before them.
    const other = await store.insert('s', 'tick', '{}', 5);
    const done = await store.insert('s', 'step.done', '{}', 777);
    const finished = await store.insert('s', 'run.finished', '{}', 777);
    expect(await node.adopt?.('s', ['step.done', 'run.finished'], 777)).toBe(true);
    expect(onSession).toEqual([`${other} tick`, `${done} step.done`, `${finished} run.finished`]);
    expect(onEvery).toEqual([`${done} step.done`, `${finished} run.finished`]);

    // Taken into the ring by a notice's catch-up first: the session had them, `*` gets them now.
    const again = await store.insert('s', 'run.finished', '{}', 888);
    const idle = await store.insert('s', 'state.changed', '{}', 888);
    wake.notify('s', idle);
    await node.flush();
    expect(onSession.slice(3)).toEqual([`${again} run.finished`, `${idle} state.changed`]);
    expect(onEvery).toHaveLength(2);
    expect(await node.adopt?.('s', ['run.finished', 'state.changed'], 888)).toBe(true);
    expect(onSession).toHaveLength(5);
    expect(onEvery.slice(2)).toEqual([`${again} run.finished`, `${idle} state.changed`]);

    // Never stored (the statement did not commit): nothing found, nothing delivered.
    expect(await node.adopt?.('s', ['run.finished', 'state.changed'], 999)).toBe(false);
    expect(onSession).toHaveLength(5);
    expect(onEvery).toHaveLength(4);
    expect((await node.retained('s')).map((e) => e.id)).toEqual([other, done, finished, again, idle]);
  });

  it('catches up after a resync and on replay, with no notice at all', async () => {
    const { a, b } = nodes();
    const wake = feed();
    b.follow(wake);
    const onB: number[] = [];
    b.subscribe('s', (e) => onB.push(e.payload.n as number));
    await b.lastId('s');
    const sent = [];
    for (const n of [1, 2, 3]) sent.push(await a.publishStored('s', 'tick', { n }));
    expect(onB).toEqual([]);
    wake.resync();
    await b.flush();
    expect(onB).toEqual([1, 2, 3]);
    const more = await a.publishStored('s', 'tick', { n: 4 });
    expect((await b.replay('s', sent[2].id)).events).toEqual([more]);
    expect(await b.lastId('s')).toBe(more.id);
    expect(onB).toEqual([1, 2, 3, 4]);
  });
});
