/**
 * Session events of several sessions in one append (PostgreSQL migration 34,
 * `svc_append_events_across`; the bus's queued events, src/events/bus-batches.ts) on a throwaway
 * PostgreSQL cluster: ids in the call's order, each session's previous id, one NOTIFY per session
 * with its last id, all or nothing; two nodes locking the same sessions in opposite orders never
 * deadlock; and the bus on it: events of three sessions published in one tick are one statement,
 * a new session's ring and a subscriber that comes right after its first publish read nothing.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { createEventBus, type EventBus } from '../../src/events/bus';
import { createPostgresEventStore } from '../../src/events/pg-event-store';
import { createEventListener, type EventNotice } from '../../src/events/pg-notify';
import type { SessionEvent } from '../../src/events/ring';
import { createPostgresClient } from '../../src/store/postgres/client';
import { migratePostgres } from '../../src/store/postgres/migrate';
import { postgresForFile, recordingClient } from '../helpers/postgres';
import { until } from '../helpers/until';

const pg = postgresForFile();

const open = (url: string) =>
  createPostgresClient({ url, pool_size: 4, statement_timeout_ms: 30_000, connect_timeout_ms: 5_000 });

const event = (sessionId: string, type: string, n = 0) => ({
  sessionId,
  type,
  payload: JSON.stringify({ n, text: 'quote " backslash \\ ü' }),
  createdAt: 1_700_000_000_000 + n,
});

describe.skipIf(!pg.available)('session events of several sessions in one append', () => {
  const closers: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const close of closers.splice(0).reverse()) await close();
  });
  async function node(url?: string) {
    const target = url ?? (await pg.cluster().createDatabase());
    const sql = await open(target);
    closers.push(() => sql.close());
    if (!url) await migratePostgres(sql);
    return { url: target, sql };
  }

  it('STORE-PG-100: ids in the call order, each session previous id, one NOTIFY per session with its last id, all or nothing', async () => {
    const { url, sql } = await node();
    const store = createPostgresEventStore({ sql });
    const listener = await createEventListener({ url, reconnectDelayMs: 50 });
    closers.push(() => listener.close());
    const notices: EventNotice[] = [];
    listener.subscribe({ event: (n) => notices.push(n), resync: () => {} });
    const first = await store.append?.('s1', 'before', '{}', 1);
    await until(() => notices.length === 1);
    notices.length = 0;

    const batch = [
      event('s1', 'a', 1),
      event('s2', 'b', 2),
      event('s1', 'c', 3),
      event('s:3', 'd', 4),
      event('s2', 'e', 5),
    ];
    const appended = await store.appendAcross?.(batch);
    expect(appended).toHaveLength(5);
    const ids = (appended ?? []).map((a) => a.id);
    expect(ids).toEqual([...ids].sort((x, y) => x - y));
    expect(new Set(ids).size).toBe(5);
    expect(ids[0]).toBeGreaterThan(first?.id ?? Number.POSITIVE_INFINITY);
    expect((appended ?? []).map((a) => a.previous)).toEqual([first?.id, 0, first?.id, 0, 0]);
    for (const sessionId of ['s1', 's2', 's:3']) {
      const rows = await store.after(sessionId, 0);
      const mine = batch.map((e, i) => ({ e, id: ids[i] })).filter(({ e }) => e.sessionId === sessionId);
      expect(rows.slice(sessionId === 's1' ? 1 : 0)).toEqual(
        mine.map(({ e, id }) => ({
          id,
          session_id: sessionId,
          type: e.type,
          payload: e.payload,
          created_at: e.createdAt,
        })),
      );
    }
    await until(() => notices.length >= 3);
    await new Promise((r) => setTimeout(r, 100));
    expect(notices.sort((x, y) => x.eventId - y.eventId)).toEqual(
      [
        { sessionId: 's:3', eventId: ids[3] },
        { sessionId: 's2', eventId: ids[4] },
        { sessionId: 's1', eventId: ids[2] },
      ].sort((x, y) => x.eventId - y.eventId),
    );

    // A bad created_at fails the call: none of its events is written.
    await expect(
      store.appendAcross?.([event('s1', 'x', 6), { ...event('s4', 'y', 7), createdAt: Number.NaN }]),
    ).rejects.toThrow();
    expect((await store.after('s1', ids[2])).length).toBe(0);
    expect((await store.after('s4', 0)).length).toBe(0);
  });

  it('STORE-PG-101: two nodes appending to the same sessions in opposite orders never deadlock, and every event is stored', async () => {
    const a = await node();
    const b = await node(a.url);
    const stores = [createPostgresEventStore({ sql: a.sql }), createPostgresEventStore({ sql: b.sql })];
    const sessions = ['p', 'q', 'r'];
    await Promise.all(
      stores.map(async (store, n) => {
        for (let round = 0; round < 15; round++) {
          const order = n === 0 ? sessions : [...sessions].reverse();
          await Promise.all(
            [0, 1, 2].map((k) =>
              store.appendAcross?.(order.map((s, i) => event(s, `n${n}`, round * 10 + k + i))),
            ),
          );
        }
      }),
    );
    for (const s of sessions) {
      const rows = await stores[0].after(s, 0);
      expect(rows).toHaveLength(2 * 15 * 3);
    }
  });

  it('STORE-PG-102: the bus writes events of three sessions published in one tick as one statement; a new ring and a subscriber right after read nothing', async () => {
    const { url, sql } = await node();
    const sent: string[] = [];
    const store = createPostgresEventStore({ sql: recordingClient(sql, sent) });
    const bus: EventBus = createEventBus({
      store: () => store,
      clock: { now: () => 1_700_000_000_000 },
      shared: true,
    });
    closers.push(async () => bus.close());
    // Another node's event of s2 before: s2's ring here starts past it, reading nothing.
    const other = await createPostgresEventStore({ sql }).append?.('s2', 'elsewhere', '{}', 1);
    const all: string[] = [];
    const s1: SessionEvent[] = [];
    bus.subscribe('*', (e) => all.push(`${e.session_id}:${e.type}`));
    bus.publish('s1', 'session.created', { n: 1 });
    bus.publish('s2', 'queue.changed', { n: 2 });
    bus.subscribe('s1', (e) => s1.push(e));
    bus.publish('s1', 'state.changed', { n: 3 });
    const last = bus.publishStored('s3', 'run.started', { n: 4 });
    await bus.flush();
    const stored = await last;
    expect(sent).toEqual([expect.stringContaining('svc_append_events_across')]);
    expect(all).toEqual(['s1:session.created', 's2:queue.changed', 's1:state.changed', 's3:run.started']);
    expect(s1.map((e) => e.type)).toEqual(['session.created', 'state.changed']);
    expect(s1[0].id).toBeLessThan(s1[1].id);
    expect(stored.id).toBeGreaterThan(s1[1].id);
    expect(await bus.lastId('s2')).toBeGreaterThan(other?.id ?? Number.POSITIVE_INFINITY);
    expect((await bus.replay('s2', 0)).events.map((e) => e.type)).toEqual(['elsewhere', 'queue.changed']);
    void url;
  });
});
