/**
 * Session events joined to a statement as the bus's next write (`EventBus.joinAll` with `next`,
 * p-finishjoin: a run's finish carrying its `run.finished` and idle state while the bus's append
 * ahead of them is still in flight) on a throwaway cluster. Pins: the join is taken with one write
 * in flight, and the statement waits for it (`turn` resolves once that append answered and was
 * delivered), so ids ascend in publish order and the log, the local listeners and another node's
 * subscriber see one sequence; events published after the join wait for it; a statement that wrote
 * nothing delivers nothing and the events published after it keep their order; with two writes
 * waiting behind the one in flight, or the session's events held by a transaction, it is refused.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { sessionLockKey } from '../../src/events/pg-event-store';
import { followOtherNodes } from '../../src/events/pg-notify';
import type { SqlClient } from '../../src/store/postgres/client';
import { busNode, type Closers, openClient } from '../helpers/pg-bus-node';
import { postgresForFile } from '../helpers/postgres';
import { until } from '../helpers/until';

const pg = postgresForFile();

describe.skipIf(!pg.available)('session events joined as the bus’s next write', () => {
  const closers: Closers = [];
  afterEach(async () => {
    for (const close of closers.splice(0).reverse()) await close();
  });

  const node = (url?: string) => busNode(pg.cluster(), closers, url);

  const logged = async (sql: SqlClient, sessionId: string) =>
    (
      await sql.query<{ type: string }>('SELECT type FROM session_events WHERE session_id = $1 ORDER BY id', [
        sessionId,
      ])
    ).map((r) => r.type);

  /** A transaction on a connection of its own holding the session's append lock until `release`. */
  const holdLock = async (url: string, sessionId: string) => {
    const holder = await openClient(url, 1);
    closers.push(() => holder.close());
    let release!: () => void;
    let locked!: () => void;
    const isLocked = new Promise<void>((resolve) => {
      locked = resolve;
    });
    const done = holder.transaction(async (tx) => {
      await tx.query('SELECT pg_advisory_xact_lock($1::bigint)', [sessionLockKey(sessionId)]);
      locked();
      await new Promise<void>((resolve) => {
        release = resolve;
      });
    });
    await isLocked;
    return { release: () => release(), done };
  };

  /** The joined events' statement: their append call alone, its rows as `settle` takes them. */
  const send = async (sql: SqlClient, call: { text: string; values: unknown[] }) =>
    (
      await sql.query<{ event_id: string; previous_id: string }>(
        `SELECT event_id, previous_id FROM ${call.text}`,
        call.values,
      )
    ).map((r) => ({ id: Number(r.event_id), previous: Number(r.previous_id) }));

  it('STORE-PG-470: with the bus’s append in flight the join is taken and its statement waits for that append’s answer: ids ascend in publish order, the log, the local listener and another node’s subscriber see one sequence, a later publish waits for the group', async () => {
    const a = await node();
    const b = await node(a.url);
    const following = followOtherNodes(b.bus, b.sql);
    closers.push(() => following.stop());
    await following.started;
    const remote: string[] = [];
    b.bus.subscribe('ses_n', (event) => remote.push(event.type));
    await b.bus.lastId('ses_n');
    const local: { id: number; type: string }[] = [];
    a.bus.subscribe('ses_n', (event) => local.push({ id: event.id, type: event.type }));
    await a.bus.lastId('ses_n');

    // The bus's append of message.completed held at the database (the session's lock taken).
    const lock = await holdLock(a.url, 'ses_n');
    a.bus.publish('ses_n', 'message.completed', {});
    a.bus.publish('ses_n', 'context.usage', {});
    await until(() => a.sent.some((t) => /svc_append_events_across/.test(t)), 'the append sent');
    const joined = a.bus.joinAll?.(
      'ses_n',
      [
        { type: 'run.finished', payload: {} },
        { type: 'state.changed', payload: {} },
      ],
      { next: true },
    );
    expect(joined).toBeDefined();
    expect(joined?.turn).toBeDefined();
    // Published after the join: behind the group.
    a.bus.publish('ses_n', 'queue.changed', {});
    let turned = false;
    void joined!.turn!.then(() => {
      turned = true;
    });
    await new Promise((resolve) => setTimeout(resolve, 150));
    expect(turned).toBe(false);
    expect(local).toEqual([]);
    lock.release();
    await lock.done;
    await joined!.turn;
    // Its turn: the append ahead answered and was delivered.
    expect(local.map((e) => e.type)).toEqual(['message.completed', 'context.usage']);
    joined!.settle(await send(a.sql, joined!.call(1)));
    await a.bus.flush();
    const sequence = ['message.completed', 'context.usage', 'run.finished', 'state.changed', 'queue.changed'];
    expect(await logged(a.sql, 'ses_n')).toEqual(sequence);
    expect(local.map((e) => e.type)).toEqual(sequence);
    expect(local.map((e) => e.id)).toEqual([...local.map((e) => e.id)].sort((x, y) => x - y));
    await until(() => remote.length === sequence.length, 'the other node got every event');
    expect(remote).toEqual(sequence);
    expect((await b.bus.replay('ses_n', 0)).events.map((e) => e.type)).toEqual(sequence);
  });

  it('STORE-PG-471: a joined statement that wrote nothing delivers nothing, later events keep their order; refused with two writes waiting behind the one in flight, or with the session’s events held by a transaction', async () => {
    const a = await node();
    const local: string[] = [];
    a.bus.subscribe('ses_m', (event) => local.push(event.type));
    await a.bus.lastId('ses_m');
    const lock = await holdLock(a.url, 'ses_m');
    a.bus.publish('ses_m', 'one', {});
    await until(() => a.sent.some((t) => /svc_append_events_across/.test(t)), 'the append sent');
    const joined = a.bus.joinAll?.('ses_m', [{ type: 'never', payload: {} }], { next: true });
    expect(joined?.turn).toBeDefined();
    a.bus.publish('ses_m', 'two', {});
    // Three writes ahead now (the append in flight, the group, 'two'): refused (publish instead).
    expect(a.bus.joinAll?.('ses_m', [{ type: 'other', payload: {} }], { next: true })).toBeUndefined();
    lock.release();
    await lock.done;
    await joined!.turn;
    joined!.settle(undefined);
    await a.bus.flush();
    expect(await logged(a.sql, 'ses_m')).toEqual(['one', 'two']);
    expect(local).toEqual(['one', 'two']);

    // Held by a transaction (its events go after its end): refused even with the queue idle.
    await a.sql.transaction(async () => {
      a.bus.publish('ses_m', 'held', {});
      expect(a.bus.joinAll?.('ses_m', [{ type: 'x', payload: {} }], { next: true })).toBeUndefined();
    });
    await a.bus.flush();
    expect(await logged(a.sql, 'ses_m')).toEqual(['one', 'two', 'held']);
  });
});
