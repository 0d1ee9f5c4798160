/**
 * Events published inside a PostgreSQL transaction, held until it ends (src/events/held-publishes.ts,
 * p-pgbus) on a throwaway cluster: nothing appended while the transaction is open, then one append
 * with every held event in publish order, after the COMMIT, so another node is told of them only
 * once the writes they announce are committed and sees the same sequence; a wait for the queue
 * inside the transaction never waits for its own end; a rolled-back transaction's held events are
 * dropped (never appended nor delivered: they announced writes that never happened, as on SQLite).
 */
import { afterEach, describe, expect, it } from 'vitest';
import { followOtherNodes } from '../../src/events/pg-notify';
import type { SqlClient } from '../../src/store/postgres/client';
import { busNode, type Closers } from '../helpers/pg-bus-node';
import { postgresForFile } from '../helpers/postgres';
import { until } from '../helpers/until';

const pg = postgresForFile();
const APPEND = /svc_append_events_across/;

describe.skipIf(!pg.available)('events published in a PostgreSQL transaction', () => {
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

  it('STORE-PG-277: nothing appended while the transaction is open; after its COMMIT one append in publish order; another node sees the same sequence, the row already committed', async () => {
    const a = await node();
    const b = await node(a.url);
    const following = followOtherNodes(b.bus, b.sql);
    closers.push(() => following.stop());
    await following.started;
    // Another node's listener of the session: each event it gets, with whether the row it announces was committed.
    const seen: { type: string; committed: boolean }[] = [];
    const checks: Promise<void>[] = [];
    b.bus.subscribe('ses_1', (event) => {
      checks.push(
        b.sql
          .one<{ n: number }>("SELECT count(*)::int AS n FROM sessions WHERE id = 'ses_1'", [])
          .then((row) => {
            seen.push({ type: event.type, committed: row?.n === 1 });
          }),
      );
    });
    // B's listener is in place once its ring of the session is loaded: the load reads the
    // session's highest id then, and events appended before that read count as before the
    // listener (a loaded box could delay it past A's COMMIT: the CI's Node 24 leg timed out so).
    await b.bus.lastId('ses_1');
    const local: string[] = [];
    a.bus.subscribe('*', (event) => local.push(`${event.session_id}:${event.type}`));

    const published = ['session.created', 'queue.changed', 'state.changed', 'run.started'];
    let appendedInside = -1;
    let loggedInside: string[] = ['not read'];
    await a.sql.transaction(async (tx) => {
      await tx.run("INSERT INTO sessions (id, created_at, updated_at) VALUES ('ses_1', 1, 1)", []);
      a.bus.publish('ses_1', published[0], { n: 0 });
      await tx.one('SELECT 1 AS one', []);
      a.bus.publish('ses_1', published[1], { n: 1 });
      a.bus.publish('ses_other', 'queue.changed', { n: 2 });
      await tx.one('SELECT 2 AS two', []);
      a.bus.publish('ses_1', published[2], { n: 3 });
      await new Promise((r) => setTimeout(r, 30));
      a.bus.publish('ses_1', published[3], { n: 4 });
      // `flush()` waits for what the queue has, not for this transaction's end.
      await a.bus.flush();
      appendedInside = a.sent.filter((t) => APPEND.test(t)).length;
      loggedInside = await b.sql.autocommit
        .query<{ type: string }>('SELECT type FROM session_events', [])
        .then((rows) => rows.map((r) => r.type));
    });
    expect(appendedInside).toBe(0);
    expect(loggedInside).toEqual([]);
    await a.bus.flush();
    expect(a.sent.filter((t) => APPEND.test(t))).toHaveLength(1);
    expect(local).toEqual([
      'ses_1:session.created',
      'ses_1:queue.changed',
      'ses_other:queue.changed',
      'ses_1:state.changed',
      'ses_1:run.started',
    ]);
    expect(await logged(a.sql, 'ses_1')).toEqual(published);

    await until(() => seen.length === published.length, 'the other node got every event');
    await Promise.all(checks);
    expect(seen.map((s) => s.type)).toEqual(published);
    expect(seen.every((s) => s.committed)).toBe(true);
    const replayed = (await b.bus.replay('ses_1', 0)).events.map((e) => e.type);
    expect(replayed).toEqual(published);
  });

  it('STORE-PG-278: a wait for the queue inside the transaction sends what it holds first (no deadlock, order kept); a rolled-back transaction’s held events are dropped, neither appended nor delivered', async () => {
    const a = await node();
    const ids: number[] = [];
    a.bus.subscribe('ses_2', (event) => ids.push(event.id));
    const stored = await a.sql.transaction(async () => {
      a.bus.publish('ses_2', 'first', {});
      a.bus.publish('ses_2', 'second', {});
      // publishStored resolves inside the transaction: the held two go first, in one append.
      const third = await a.bus.publishStored('ses_2', 'third', {});
      a.bus.publish('ses_2', 'fourth', {});
      await a.bus.flush();
      a.bus.publish('ses_2', 'fifth', {});
      // replay waits for the queue too, behind the held event.
      const inside = (await a.bus.replay('ses_2', 0)).events.map((e) => e.type);
      return { third, inside };
    });
    expect(stored.third.type).toBe('third');
    expect(stored.inside).toEqual(['first', 'second', 'third', 'fourth', 'fifth']);
    expect(await logged(a.sql, 'ses_2')).toEqual(['first', 'second', 'third', 'fourth', 'fifth']);
    expect(ids).toEqual([...ids].sort((x, y) => x - y));

    a.sent.length = 0;
    const delivered: string[] = [];
    a.bus.subscribe('ses_3', (event) => delivered.push(event.type));
    await expect(
      a.sql.transaction(async (tx) => {
        a.bus.publish('ses_3', 'before the failure', {});
        a.bus.publish('ses_3', 'and another', {});
        await tx.run('SELECT no_such_column FROM sessions', []);
      }),
    ).rejects.toThrow();
    await a.bus.flush();
    expect(a.sent.filter((t) => APPEND.test(t))).toHaveLength(0);
    expect(await logged(a.sql, 'ses_3')).toEqual([]);
    expect(delivered).toEqual([]);

    // Outside a transaction nothing is held: published as before.
    a.bus.publish('ses_3', 'outside', {});
    await a.bus.flush();
    expect(await logged(a.sql, 'ses_3')).toEqual(['outside']);
    expect(delivered).toEqual(['outside']);
  });
  it('STORE-PG-921: a transaction that rolled a savepoint back, or sent a statement alone, and then failed keeps its held events: appended and delivered after its end (what they announce may stand); one that failed whole before its COMMIT drops them', async () => {
    const a = await node();
    const delivered: string[] = [];
    a.bus.subscribe('ses_4', (event) => delivered.push(event.type));
    // A savepoint rolled back, the transaction committed: every held event goes.
    await a.sql.transaction(async (tx) => {
      a.bus.publish('ses_4', 'before the savepoint', {});
      await a.sql
        .transaction(async (inner) => {
          await inner.run('SELECT no_such_column FROM sessions', []);
        })
        .catch(() => {});
      await tx.one('SELECT 1 AS one', []);
      a.bus.publish('ses_4', 'after the savepoint', {});
    });
    await a.bus.flush();
    expect(await logged(a.sql, 'ses_4')).toEqual(['before the savepoint', 'after the savepoint']);
    expect(delivered).toEqual(['before the savepoint', 'after the savepoint']);

    // Its first statement sent alone committed; a later one failed: the session row stands, and so do its events.
    await expect(
      a.sql.transaction(async (tx) => {
        await a.sql.alone?.run(
          "INSERT INTO sessions (id, created_at, updated_at) VALUES ('ses_4', 1, 1)",
          [],
        );
        a.bus.publish('ses_4', 'session written alone', {});
        await tx.run('SELECT no_such_column FROM sessions', []);
      }),
    ).rejects.toThrow();
    await a.bus.flush();
    expect(
      (await a.sql.one<{ n: number }>("SELECT count(*)::int AS n FROM sessions WHERE id = 'ses_4'", []))?.n,
    ).toBe(1);
    expect(await logged(a.sql, 'ses_4')).toEqual([
      'before the savepoint',
      'after the savepoint',
      'session written alone',
    ]);
    expect(delivered.at(-1)).toBe('session written alone');

    // Failed whole before its COMMIT: dropped.
    await expect(
      a.sql.transaction(async (tx) => {
        await tx.run("UPDATE sessions SET title = 'x' WHERE id = 'ses_4'", []);
        a.bus.publish('ses_4', 'never', {});
        await tx.run('SELECT no_such_column FROM sessions', []);
      }),
    ).rejects.toThrow();
    await a.bus.flush();
    expect(await logged(a.sql, 'ses_4')).toEqual([
      'before the savepoint',
      'after the savepoint',
      'session written alone',
    ]);
    expect(delivered).not.toContain('never');
  });
});
