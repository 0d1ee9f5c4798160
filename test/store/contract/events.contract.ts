/**
 * The EventStore contract (issue 18): what every backend's session event log answers, run on
 * SQLite and on PostgreSQL by ./events.contract.test.ts. Pins: ids increase across sessions and
 * within one; maxId is 0 for an unknown session, else the highest; `after` is exclusive, in id
 * order, one session only, with the stored row (type, payload text, created_at); `after` with a
 * limit answers the first rows only (a replay's page) and `count` counts a range without reading it.
 */
import { expect, it } from 'vitest';
import type { EventStore } from '../../../src/events/event-store';
import type { AsyncOf } from '../../../src/sessions/async-of';
import { withOpened } from './fixture';

export type OpenEventStore = () => Promise<{ store: AsyncOf<EventStore>; close: () => Promise<void> }>;

export function eventStoreContract(open: OpenEventStore): void {
  const withStore = withOpened(open, (f) => f.store);

  it(
    'STORE-PG-50 insert returns increasing ids across and within sessions; maxId follows',
    withStore(async (store) => {
      expect(await store.maxId('s1')).toBe(0);
      const a = await store.insert('s1', 'x', '{"n":1}', 10);
      const b = await store.insert('s2', 'x', '{"n":2}', 11);
      const c = await store.insert('s1', 'y', '{"n":3}', 12);
      expect(a).toBeGreaterThan(0);
      expect(b).toBeGreaterThan(a);
      expect(c).toBeGreaterThan(b);
      expect(await store.maxId('s1')).toBe(c);
      expect(await store.maxId('s2')).toBe(b);
      expect(await store.maxId('nope')).toBe(0);
    }),
  );

  it(
    'STORE-PG-51 after(id) replays one session after the id, exclusive, in id order, rows intact',
    withStore(async (store) => {
      const ids: number[] = [];
      for (let n = 0; n < 5; n++) {
        ids.push(await store.insert('s1', `t${n}`, JSON.stringify({ n }), 100 + n));
        await store.insert('s2', 'other', '{}', 200 + n);
      }
      const all = await store.after('s1', 0);
      expect(all.map((r) => r.id)).toEqual(ids);
      expect(all[0]).toEqual({
        id: ids[0],
        session_id: 's1',
        type: 't0',
        payload: '{"n":0}',
        created_at: 100,
      });
      expect((await store.after('s1', ids[2] ?? 0)).map((r) => r.type)).toEqual(['t3', 't4']);
      expect(await store.after('s1', ids[4] ?? 0)).toEqual([]);
      expect(await store.after('nope', 0)).toEqual([]);
    }),
  );

  it(
    'STORE-PG-920 after(id, limit) answers the first rows only; count(after, upTo) counts one session in the range',
    withStore(async (store) => {
      const ids: number[] = [];
      for (let n = 0; n < 7; n++) {
        ids.push(await store.insert('s1', `t${n}`, JSON.stringify({ n }), 100 + n));
        await store.insert('s2', 'other', '{}', 200 + n);
      }
      const pages: number[][] = [];
      for (let after = 0; ; ) {
        const page = await store.after('s1', after, 3);
        pages.push(page.map((r) => r.id));
        if (page.length < 3) break;
        after = page[page.length - 1].id;
      }
      expect(pages).toEqual([ids.slice(0, 3), ids.slice(3, 6), ids.slice(6)]);
      expect((await store.after('s1', ids[5] ?? 0, 3)).map((r) => r.type)).toEqual(['t6']);
      expect(await store.count?.('s1', 0, ids[6] ?? 0)).toBe(7);
      expect(await store.count?.('s1', ids[1] ?? 0, ids[4] ?? 0)).toBe(3);
      expect(await store.count?.('s1', ids[6] ?? 0, ids[6] ?? 0)).toBe(0);
      expect(await store.count?.('nope', 0, ids[6] ?? 0)).toBe(0);
    }),
  );
}
