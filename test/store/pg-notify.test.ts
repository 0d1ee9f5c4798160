/**
 * The cross-node wake-up (src/events/pg-notify.ts) on a throwaway PostgreSQL cluster: two pools
 * on one database stand for two nodes. An append on A wakes a subscriber on B, which reads the
 * event from the table; after B's listening connection is killed (pg_terminate_backend) the
 * listener reconnects, tells the subscriber to resync, and no event appended meanwhile is lost.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { StoredEventRow } from '../../src/events/event-store';
import { createPostgresEventStore } from '../../src/events/pg-event-store';
import { createEventListener, type EventListener, parseNotice } from '../../src/events/pg-notify';
import { createPostgresClient, type SqlClient } from '../../src/store/postgres/client';
import { migratePostgres } from '../../src/store/postgres/migrate';
import { postgresForFile } from '../helpers/postgres';
import { until } from '../helpers/until';

const pg = postgresForFile();

const open = (url: string) =>
  createPostgresClient({ url, pool_size: 2, statement_timeout_ms: 30_000, connect_timeout_ms: 5_000 });

describe('parseNotice', () => {
  it('STORE-PG-52 reads <session id>:<event id>, the session id may hold colons', () => {
    expect(parseNotice('s1:42')).toEqual({ sessionId: 's1', eventId: 42 });
    expect(parseNotice('a:b:7')).toEqual({ sessionId: 'a:b', eventId: 7 });
    expect(parseNotice('nope')).toBeUndefined();
    expect(parseNotice(':3')).toBeUndefined();
    expect(parseNotice(undefined)).toBeUndefined();
  });
});

describe.skipIf(!pg.available)('event wake-up across nodes on PostgreSQL', () => {
  const closers: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const close of closers.splice(0).reverse()) await close();
  });

  async function twoNodes() {
    const url = await pg.cluster().createDatabase();
    const a: SqlClient = await open(url);
    closers.push(() => a.close());
    await migratePostgres(a);
    const b: SqlClient = await open(url);
    closers.push(() => b.close());
    const listener: EventListener = await createEventListener({ url, reconnectDelayMs: 50 });
    closers.push(() => listener.close());
    // A subscriber on B that keeps its last id and reads from the table when woken or resynced.
    const storeB = createPostgresEventStore({ sql: b });
    const seen: StoredEventRow[] = [];
    let last = 0;
    let resyncs = 0;
    let reading = Promise.resolve();
    const read = () => {
      reading = reading.then(async () => {
        for (const row of await storeB.after('s1', last)) {
          seen.push(row);
          last = row.id;
        }
      });
    };
    listener.subscribe({
      event: (notice) => {
        if (notice.sessionId === 's1') read();
      },
      resync: () => {
        resyncs++;
        read();
      },
    });
    return { a: createPostgresEventStore({ sql: a }), b, listener, seen, resyncs: () => resyncs };
  }

  it('STORE-PG-53 an append on node A wakes a subscriber on node B, which reads it from the table', async () => {
    const { a, seen } = await twoNodes();
    const id = await a.insert('s1', 'hello', '{"x":1}', 5);
    await a.insert('s2', 'other', '{}', 6);
    await until(() => seen.length === 1);
    expect(seen[0]).toEqual({ id, session_id: 's1', type: 'hello', payload: '{"x":1}', created_at: 5 });
  });

  it('STORE-PG-54 after the listening connection is killed it reconnects, resyncs, and loses no event', async () => {
    const { a, b, listener, seen, resyncs } = await twoNodes();
    await a.insert('s1', 'before', '{}', 1);
    await until(() => seen.length === 1);
    const pid = listener.backendPid();
    expect(pid).toBeTypeOf('number');
    await b.query('SELECT pg_terminate_backend($1)', [pid]);
    // Appended while the listener may be down: its NOTIFY can be missed, the resync reads it.
    await a.insert('s1', 'while-down', '{}', 2);
    await until(() => resyncs() >= 1);
    await until(() => seen.length === 2);
    expect(listener.backendPid()).not.toBe(pid);
    await a.insert('s1', 'after', '{}', 3);
    await until(() => seen.length === 3);
    expect(seen.map((r) => r.type)).toEqual(['before', 'while-down', 'after']);
  });
});
