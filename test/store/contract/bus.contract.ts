/**
 * The bus over each backend's event log (issue 18), run on SQLite and PostgreSQL by
 * ./bus.contract.test.ts. Pins: events published in a burst are stored in publish order (ids
 * increase per session and overall) and reach subscribers once stored, with their ids, in order;
 * `publishStored` resolves the stored event; `replay` after an id is exact; a second bus on the
 * same log (another process or node) replays those events from the log after a Last-Event-ID.
 */
import { expect, it } from 'vitest';
import { createEventBus, type SessionEvent } from '../../../src/events/bus';
import type { EventStore } from '../../../src/events/event-store';
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
}
