/**
 * The async context a bus event reaches its listeners in, on PostgreSQL (src/events/bus.ts): the
 * event is delivered after its append's round trip, in the publisher's async context captured at
 * publish, so a listener's reads join the transaction the event was published in (its uncommitted
 * rows), for the session's listeners and '*' alike, and a listener sees the publisher's store of
 * any AsyncLocalStorage; the append itself is not part of that transaction (the write queue runs
 * in the bus's own context: a rolled-back publisher keeps its event). Errors surface as before: a
 * throwing listener goes to `onError` and the others still run, a failed append rejects
 * `publishStored`. The context is an `AsyncResource`, not `AsyncLocalStorage.snapshot()` (≈ 13 µs
 * a publish on Node 20; bench/bus-publish-context.mjs).
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createEventBus } from '../../src/events/bus';
import type { EventStore } from '../../src/events/event-store';
import { createPostgresEventStore } from '../../src/events/pg-event-store';
import { createPostgresClient, type SqlClient } from '../../src/store/postgres/client';
import { migratePostgres } from '../../src/store/postgres/migrate';
import { testClock } from '../helpers/make-test-app';
import { postgresForFile } from '../helpers/postgres';

const pg = postgresForFile();

describe.skipIf(!pg.available)('the publisher context of a bus event on PostgreSQL', () => {
  const closers: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const close of closers.splice(0).reverse()) await close();
  });

  async function setup(wrap: (store: EventStore) => EventStore = (s) => s) {
    const url = await pg.cluster().createDatabase();
    const sql = await createPostgresClient({
      url,
      pool_size: 4,
      statement_timeout_ms: 30_000,
      connect_timeout_ms: 5_000,
    });
    closers.push(() => sql.close());
    await migratePostgres(sql);
    await sql.run('CREATE TABLE scratch (note text)');
    const errors: unknown[] = [];
    const store = createPostgresEventStore({ sql });
    const bus = createEventBus({
      store: () => wrap(store),
      clock: testClock(),
      shared: true,
      onError: (e) => errors.push(e),
    });
    closers.push(async () => bus.close());
    return { sql, store, bus, errors };
  }

  /** What a listener sees: whether it is in a transaction, and the rows its read finds. */
  const observe = (sql: SqlClient) => ({
    inTransaction: sql.inTransaction(),
    notes: sql.query<{ note: string }>('SELECT note FROM scratch ORDER BY note'),
  });

  it("ENGINE-CPU-30: session and '*' listeners read inside the publisher's open transaction; the append is not part of it", async () => {
    const { sql, store, bus } = await setup();
    const seen: { who: string; inTransaction: boolean; notes: Promise<{ note: string }[]> }[] = [];
    bus.subscribe('s1', (e) => e.type === 'in-tx' && seen.push({ who: 'session', ...observe(sql) }));
    bus.subscribe('*', (e) => e.type === 'in-tx' && seen.push({ who: '*', ...observe(sql) }));

    await expect(
      sql.transaction(async () => {
        await sql.run("INSERT INTO scratch VALUES ('uncommitted')");
        const event = await bus.publishStored('s1', 'in-tx', { n: 1 });
        // Delivered (stored resolves after delivery) while the transaction is still open.
        expect(seen.map((s) => [s.who, s.inTransaction])).toEqual([
          ['session', true],
          ['*', true],
        ]);
        for (const s of seen) expect(await s.notes).toEqual([{ note: 'uncommitted' }]);
        expect(event.id).toBeGreaterThan(0);
        throw new Error('roll back');
      }),
    ).rejects.toThrow('roll back');

    // The publisher's transaction rolled back; the event, appended outside it, stays.
    expect(await sql.query('SELECT note FROM scratch')).toEqual([]);
    expect((await store.after('s1', 0)).map((r) => r.type)).toEqual(['in-tx']);

    // Published outside any transaction: the listeners are outside one too.
    seen.length = 0;
    await bus.publishStored('s1', 'in-tx', { n: 2 });
    expect(seen.map((s) => [s.who, s.inTransaction])).toEqual([
      ['session', false],
      ['*', false],
    ]);
    for (const s of seen) expect(await s.notes).toEqual([]);
  });

  it("ENGINE-CPU-31: a listener sees the publisher's store of any AsyncLocalStorage, and only its own publisher's", async () => {
    const { bus } = await setup();
    const span = new AsyncLocalStorage<string>();
    const seen: [string, string | undefined][] = [];
    bus.subscribe('s1', (e) => seen.push([`s1 ${e.type}`, span.getStore()]));
    bus.subscribe('*', (e) => seen.push([`* ${e.type}`, span.getStore()]));

    // Published in one tick, appended in one call: each is still delivered in its own context.
    span.run('a', () => bus.publish('s1', 'first', {}));
    bus.publish('s1', 'second', {});
    span.run('c', () => bus.publish('s1', 'third', {}));
    await bus.flush();
    expect(seen).toEqual([
      ['s1 first', 'a'],
      ['* first', 'a'],
      ['s1 second', undefined],
      ['* second', undefined],
      ['s1 third', 'c'],
      ['* third', 'c'],
    ]);
  });

  it('ENGINE-CPU-32: a throwing listener goes to onError and the others still run; a failed append rejects publishStored', async () => {
    const { bus, errors } = await setup((store) => ({
      ...store,
      appendAcross: (events) =>
        events.some((e) => e.type === 'boom')
          ? Promise.reject(new Error('append failed'))
          : (store.appendAcross as NonNullable<EventStore['appendAcross']>)(events),
    }));
    const span = new AsyncLocalStorage<string>();
    const got: string[] = [];
    bus.subscribe('s1', () => {
      throw new Error(`listener broke in ${span.getStore()}`);
    });
    bus.subscribe('s1', (e) => got.push(`${e.type} ${span.getStore()}`));

    const event = await span.run('ctx', () => bus.publishStored('s1', 'ok', {}));
    expect(event.type).toBe('ok');
    expect(got).toEqual(['ok ctx']);
    expect(errors.map((e) => (e as Error).message)).toEqual(['listener broke in ctx']);

    await expect(span.run('ctx', () => bus.publishStored('s1', 'boom', {}))).rejects.toThrow('append failed');
    expect(got).toEqual(['ok ctx']);
    expect(errors.map((e) => (e as Error).message)).toEqual(['listener broke in ctx', 'append failed']);
  });
});

describe('the publisher context of a bus event (a log that answers later)', () => {
  it('ENGINE-CPU-33: is captured without AsyncLocalStorage.snapshot() (≈ 13 µs a publish on Node 20)', async () => {
    const snapshot = vi.spyOn(AsyncLocalStorage, 'snapshot');
    try {
      const rows: { id: number; session_id: string; type: string; payload: string; created_at: number }[] =
        [];
      const later = <T>(value: () => T) => new Promise<T>((resolve) => setImmediate(() => resolve(value())));
      const store: EventStore = {
        insert: (session_id, type, payload, created_at) =>
          later(() => rows.push({ id: rows.length + 1, session_id, type, payload, created_at })),
        maxId: (sessionId) => later(() => rows.filter((r) => r.session_id === sessionId).length),
        after: (sessionId, afterId) =>
          later(() => rows.filter((r) => r.session_id === sessionId && r.id > afterId)),
      };
      const bus = createEventBus({ store: () => store, clock: testClock() });
      const tag = new AsyncLocalStorage<string>();
      const seen: (string | undefined)[] = [];
      bus.subscribe('*', () => seen.push(tag.getStore()));
      tag.run('publisher', () => bus.publish('s1', 'a', {}));
      await bus.flush();
      expect(seen).toEqual(['publisher']);
      expect(snapshot).not.toHaveBeenCalled();
    } finally {
      snapshot.mockRestore();
    }
  });
});
