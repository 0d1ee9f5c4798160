/**
 * The bus over each backend's event log (issue 18), run on SQLite and PostgreSQL by
 * ./bus.contract.test.ts. Pins: events published in a burst are stored in publish order (ids
 * increase per session and overall) and reach subscribers once stored, with their ids, in order;
 * `publishStored` resolves the stored event; `replay` after an id is exact; a second bus on the
 * same log (another process or node) replays those events from the log after a Last-Event-ID;
 * a replay read in pages (`replay` with a page) gives the same events, and counts them all; a
 * ring that left memory is read back with no more of the log than it keeps (plus one event, the id
 * it starts after), however much another node appended to its session meanwhile.
 */
import { expect, it } from 'vitest';
import { createEventBus, type SessionEvent } from '../../../src/events/bus';
import type { EventStore, ImmediateEventStore, StoredEventRow } from '../../../src/events/event-store';
import { testClock } from '../../helpers/make-test-app';

export type OpenLog = () => Promise<{ store: () => EventStore; close: () => Promise<void> }>;

export function busContract(open: OpenLog): void {
  const withLog = (fn: (store: () => EventStore) => Promise<void>) => async () => {
    const { store, close } = await open();
    try {
      await fn(store);
    } finally {
      await close();
    }
  };

  it(
    'STORE-PG-bus: a burst is stored in publish order and delivered once stored, with ids, in order',
    withLog(async (store) => {
      const bus = createEventBus({ store, clock: testClock(), ringSize: 100 });
      const seen: SessionEvent[] = [];
      bus.subscribe('*', (event) => seen.push(event));
      for (let n = 0; n < 20; n++) bus.publish(n % 2 ? 's1' : 's2', 'tick', { n });
      const last = await bus.publishStored('s1', 'last', { n: 20 });
      expect(seen.map((e) => e.payload.n)).toEqual([...Array(21).keys()]);
      const ids = seen.map((e) => e.id);
      expect([...ids].sort((a, b) => a - b)).toEqual(ids);
      expect(new Set(ids).size).toBe(ids.length);
      expect(last.id).toBe(ids[20]);
      expect(await bus.lastId('s1')).toBe(last.id);
      const s1 = seen.filter((e) => e.session_id === 's1');
      expect((await bus.replay('s1', s1[3].id)).events).toEqual(s1.slice(4));
      expect(await bus.retained('s1')).toEqual(s1);
    }),
  );

  it(
    'STORE-PG-bus: another bus on the same log replays after a Last-Event-ID from the log',
    withLog(async (store) => {
      const a = createEventBus({ store, clock: testClock(), ringSize: 100 });
      const sent = await Promise.all([1, 2, 3, 4].map((n) => a.publishStored('s', 'tick', { n })));
      const b = createEventBus({ store, clock: testClock(), ringSize: 100 });
      expect(await b.lastId('s')).toBe(sent[3].id);
      const replay = await b.replay('s', sent[1].id);
      expect(replay.source).toBe('log');
      expect(replay.events).toEqual(sent.slice(2));
      const next = await b.publishStored('s', 'tick', { n: 5 });
      expect(next.id).toBeGreaterThan(sent[3].id);
    }),
  );

  it(
    'STORE-PG-bus: a replay read in pages gives the events in order, each once, and counts the whole replay',
    withLog(async (store) => {
      const a = createEventBus({ store, clock: testClock(), ringSize: 100 });
      const sent: SessionEvent[] = [];
      for (let n = 1; n <= 7; n++) sent.push(await a.publishStored('s', 'tick', { n }));
      await a.publishStored('other', 'tick', { n: 0 });
      // Another bus (another node): the ids are older than its ring, so from the log.
      const b = createEventBus({ store, clock: testClock(), ringSize: 2 });
      const upTo = sent[6].id;
      const first = await b.replay('s', 0, { limit: 3, upTo });
      expect(first).toMatchObject({ source: 'log', count: 7 });
      const read = [...first.events];
      while (read.length < 7) {
        const page = await b.replay('s', read[read.length - 1].id, { limit: 3 });
        expect(page.events.length).toBeGreaterThan(0);
        expect(page.events.length).toBeLessThanOrEqual(3);
        read.push(...page.events);
      }
      expect(read).toEqual(sent);
      expect((await b.replay('s', sent[4].id, { limit: 3, upTo })).count).toBe(2);
    }),
  );

  it(
    'STORE-PG-bus: a ring that left memory is read back with at most its size of the log, however much was appended since',
    withLog(async (store) => {
      const reads: number[] = [];
      const ringSize = 3;
      const a = createEventBus({
        store: () => countingReads(store(), reads),
        clock: testClock(),
        ringSize,
        maxRings: 1,
      });
      const mine = [
        await a.publishStored('s', 'tick', { n: 1 }),
        await a.publishStored('s', 'tick', { n: 2 }),
      ];
      await a.publishStored('other', 'tick', { n: 0 }); // s's ring leaves memory (no listener)
      // Another node appends a long run to s meanwhile.
      const b = createEventBus({ store, clock: testClock(), ringSize: 100 });
      const theirs: SessionEvent[] = [];
      for (let n = 3; n <= 42; n++) theirs.push(await b.publishStored('s', 'tick', { n }));
      reads.length = 0;
      const retained = await a.retained('s');
      expect(retained.map((e) => e.payload.n)).toEqual([40, 41, 42]);
      expect(reads.length).toBeGreaterThan(0);
      expect(Math.max(...reads)).toBeLessThanOrEqual(ringSize + 1);
      // It answers as the whole read did: older ids from the log, the last three from the ring.
      const fromRing = await a.replay('s', theirs[36].id);
      expect(fromRing).toMatchObject({ source: 'ring' });
      expect(fromRing.events.map((e) => e.payload.n)).toEqual([40, 41, 42]);
      const fromLog = await a.replay('s', mine[0].id);
      expect(fromLog.source).toBe('log');
      expect(fromLog.events.map((e) => e.payload.n)).toEqual([...Array(41).keys()].map((i) => i + 2));
      const next = await a.publishStored('s', 'tick', { n: 43 });
      expect(await a.lastId('s')).toBe(next.id);
      expect((await a.retained('s')).map((e) => e.payload.n)).toEqual([41, 42, 43]);
    }),
  );
}

/** The store, noting how many rows each read of a session's events answers (immediate reads too). */
function countingReads(inner: EventStore & { readonly now?: ImmediateEventStore }, reads: number[]) {
  const note = <T extends StoredEventRow[]>(rows: T): T => {
    reads.push(rows.length);
    return rows;
  };
  const now = inner.now;
  return {
    ...inner,
    after: async (sessionId: string, afterId: number, limit?: number) =>
      note(await inner.after(sessionId, afterId, limit)),
    ...(inner.latest
      ? {
          latest: async (sessionId: string, afterId: number, limit: number) =>
            note(await inner.latest!(sessionId, afterId, limit)),
        }
      : {}),
    ...(now
      ? {
          now: {
            ...now,
            after: (sessionId: string, afterId: number, limit?: number) =>
              note(now.after(sessionId, afterId, limit)),
            latest: (sessionId: string, afterId: number, limit: number) =>
              note(now.latest(sessionId, afterId, limit)),
          },
        }
      : {}),
  };
}
