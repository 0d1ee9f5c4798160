/**
 * How the LISTEN connection (src/events/pg-notify.ts) hands a notification to its subscribers, on a
 * stand-in connection (no server): a node hears its own appends and session writes too (≈ 7
 * notifications a PostgreSQL agent step, docs/performance-log.md), so a notification is dispatched
 * without copying the subscriber list, and only to the subscribers that take its kind.
 */
import { EventEmitter } from 'node:events';
import type { Client } from 'pg';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createEventListener, type EventSubscriber } from '../../src/events/pg-notify';
import { TABLE_CHANGES_CHANNEL } from '../../src/store/postgres/table-changes';

/** A connection that answers the listener's LISTEN and pid query and emits what the test sends. */
function standIn() {
  const connection = Object.assign(new EventEmitter(), {
    connect: async () => {},
    query: async () => ({ rows: [{ pid: 4242 }] }),
    end: async () => {},
  });
  const sql = { dedicated: () => connection as unknown as Client };
  const notify = (channel: string, payload: string, processId = 99) =>
    connection.emit('notification', { channel, payload, processId });
  return { sql, notify };
}

describe('the LISTEN connection dispatching notifications', () => {
  afterEach(() => {
    vi.restoreAllMocks();
  });

  it('STORE-PG-300: a notification is handed over without copying the subscriber list (no Set iteration per notice)', async () => {
    const { sql, notify } = standIn();
    const listener = await createEventListener({ sql });
    const events: number[] = [];
    const tables: string[] = [];
    listener.subscribe({ event: (n) => events.push(n.eventId), resync: () => {} });
    listener.subscribe({ resync: () => {}, tableChanged: (t) => tables.push(t) });
    const iterations = vi.spyOn(Set.prototype, Symbol.iterator as never);
    for (let i = 1; i <= 10; i++) {
      notify('svc_events', `s1:${i}`);
      notify(TABLE_CHANGES_CHANNEL, 'sessions');
    }
    expect(iterations).toHaveBeenCalledTimes(0);
    expect(events).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
    expect(tables).toHaveLength(10);
    await listener.close();
  });

  it('STORE-PG-301: an event notice does not touch a subscriber that takes only table changes, nor a table change one that takes only events', async () => {
    const { sql, notify } = standIn();
    const listener = await createEventListener({ sql });
    const reads = { event: 0, tableChanged: 0 };
    const counted = <T extends object>(target: T) =>
      new Proxy(target, {
        get(t, key, receiver) {
          if (key === 'event' || key === 'tableChanged') reads[key]++;
          return Reflect.get(t, key, receiver);
        },
      });
    const tables: [string, number | undefined][] = [];
    const events: string[] = [];
    listener.subscribe(
      counted<EventSubscriber>({ resync: () => {}, tableChanged: (t, pid) => tables.push([t, pid]) }),
    );
    listener.subscribe(
      counted<EventSubscriber>({
        resync: () => {},
        event: (n) => events.push(`${n.sessionId}:${n.eventId}`),
      }),
    );
    const atSubscribe = { ...reads };
    for (let i = 1; i <= 5; i++) notify('svc_events', `a:b:${i}`);
    for (let i = 1; i <= 3; i++) notify(TABLE_CHANGES_CHANNEL, 'sessions', 100 + i);
    // Only the calls themselves read the method: one read per delivered notice, none of the other kind.
    expect(reads.event - atSubscribe.event).toBe(5);
    expect(reads.tableChanged - atSubscribe.tableChanged).toBe(3);
    expect(events).toEqual(['a:b:1', 'a:b:2', 'a:b:3', 'a:b:4', 'a:b:5']);
    expect(tables).toEqual([
      ['sessions', 101],
      ['sessions', 102],
      ['sessions', 103],
    ]);
    await listener.close();
  });

  it('STORE-PG-302: one subscriber failing does not stop the others; one added or removed during a notice changes the next', async () => {
    const { sql, notify } = standIn();
    const listener = await createEventListener({ sql });
    const seen: string[] = [];
    let off: (() => void) | undefined;
    const late: EventSubscriber = { event: (n) => seen.push(`late ${n.eventId}`), resync: () => {} };
    listener.subscribe({
      event: (n) => {
        seen.push(`first ${n.eventId}`);
        if (n.eventId === 1) off = listener.subscribe(late);
        if (n.eventId === 2) off?.();
        throw new Error('broken subscriber');
      },
      resync: () => {},
    });
    listener.subscribe({ event: (n) => seen.push(`second ${n.eventId}`), resync: () => {} });
    notify('svc_events', 's:1');
    notify('svc_events', 's:2');
    notify('svc_events', 's:3');
    expect(seen).toEqual(['first 1', 'second 1', 'first 2', 'second 2', 'late 2', 'first 3', 'second 3']);
    await listener.close();
  });
});
