/**
 * A new session's INSERT notifies no other node (issue 18 item 6, p-pgserver3, migration 49): the
 * `sessions` change notifications (migration 43) are for the rows a node keeps
 * (src/sessions/pg-kept-sessions.ts), and a node keeps only rows it read or wrote, never a session
 * another node has just inserted. Pinned here, on a throwaway cluster:
 * - an INSERT into `sessions` calls no trigger function and notifies nothing; UPDATE, DELETE,
 *   TRUNCATE and a rolled-back nothing as before (STORE-PG-880);
 * - node A's kept session row stays kept (no read) while node B creates sessions; B's update of that
 *   row is still seen once its notification arrived (STORE-PG-881).
 * Nothing is timed: waits are bounded loops on what the node observes; a marker notification sent
 * after the writes (they arrive in commit order) says every earlier one has arrived.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { createEventListener } from '../../src/events/pg-notify';
import { createPostgresSessionStore } from '../../src/sessions/pg-session-store';
import { followingNodes, postgresForFile, twoNodes } from '../helpers/postgres';
import { until } from '../helpers/until';

const pg = postgresForFile();

const clock = () => {
  let now = 1_000;
  return { now: () => ++now };
};
const ids = () => {
  let n = 0;
  return { next: (prefix: string) => `${prefix}_${++n}_${Math.random().toString(36).slice(2, 8)}` };
};
const READ = /^SELECT \* FROM sessions WHERE id = \$1$/;
const insertSession = (id: string) =>
  `INSERT INTO sessions (id, title, workspace, created_at, updated_at) VALUES ('${id}', 't', '/w', 1, 1)`;

describe.skipIf(!pg.available)('a new session notifies no other node (migration 49)', () => {
  const closers: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const close of closers.splice(0).reverse()) await close();
  });

  it('STORE-PG-880: an INSERT into sessions calls no trigger function and notifies nothing; UPDATE, DELETE and TRUNCATE notify as before', async () => {
    const { sql, other, close } = await twoNodes(pg.cluster());
    closers.push(close);
    const heard: string[] = [];
    const listener = await createEventListener({ sql, reconnectDelayMs: 50 });
    closers.push(() => listener.close());
    listener.subscribe({ event: () => {}, resync: () => {}, tableChanged: (table) => heard.push(table) });

    // The trigger function's calls in one transaction (track_functions counts PL/pgSQL calls).
    const calls = await other.transaction(async (tx) => {
      await tx.run("SET LOCAL track_functions = 'pl'");
      const counted = async () =>
        Number(
          (
            await tx.one<{ calls: string | null }>(
              "SELECT sum(calls) AS calls FROM pg_stat_xact_user_functions WHERE funcname = 'svc_notify_table_change'",
            )
          )?.calls ?? 0,
        );
      await tx.run(insertSession('ses_a'));
      const afterInsert = await counted();
      await tx.run("UPDATE sessions SET title = 'u' WHERE id = 'ses_a'");
      return { afterInsert, afterUpdate: await counted() };
    });
    expect(calls).toEqual({ afterInsert: 0, afterUpdate: 1 });

    const marker = async (name: string) => {
      await other.run(`SELECT pg_notify('svc_table_changes', '${name}')`);
      await until(() => heard.includes(name), `marker ${name} heard`);
    };
    await marker('m0');
    heard.length = 0;
    await other.run(insertSession('ses_b'));
    await other.run(insertSession('ses_c'));
    await marker('m1');
    expect(heard).toEqual(['m1']);

    await other.run("UPDATE sessions SET title = 'x' WHERE id = 'ses_b'");
    await other.run("DELETE FROM sessions WHERE id = 'ses_b'");
    await expect(
      other.transaction(async (tx) => {
        await tx.run("UPDATE sessions SET title = 'y' WHERE id = 'ses_c'");
        throw new Error('rolled back');
      }),
    ).rejects.toThrow('rolled back');
    await other.run('TRUNCATE sessions CASCADE');
    await marker('m2');
    // (TRUNCATE … CASCADE empties the tables referencing sessions too: their own names left out.)
    expect(heard.filter((t) => t === 'sessions' || t.startsWith('m'))).toEqual([
      'm1',
      'sessions',
      'sessions',
      'sessions',
      'm2',
    ]);
  });

  it('STORE-PG-881: a kept session row stays kept while another node creates sessions; its update still seen after its notification', async () => {
    const { a, both, changes, sent, follow } = await followingNodes(pg.cluster(), closers);
    const onA = createPostgresSessionStore({ sql: a, clock: clock(), ids: ids(), workspace: '/w' });
    const onB = createPostgresSessionStore({ sql: both.other, clock: clock(), ids: ids(), workspace: '/w' });
    await follow().started;
    const reads = () => sent.filter((t) => READ.test(t)).length;
    /** Every notification B sent so far has arrived on A (they come in commit order). */
    const bNotificationsIn = async () => {
      const before = changes.generation('findings');
      await both.other.run("SELECT pg_notify('svc_table_changes', 'findings')");
      await until(() => changes.generation('findings') !== before, 'B`s marker heard');
    };

    const session = await onB.create({ title: 'one' });
    await bNotificationsIn();
    expect((await onA.get(session.id))?.title).toBe('one');
    expect(reads()).toBe(1);
    const generation = changes.generation('sessions');

    // B creates sessions (a compat request's new session each): A's kept row is still answered.
    for (let i = 0; i < 3; i++) await onB.create({ title: `new ${i}` });
    await bNotificationsIn();
    expect(changes.generation('sessions')).toBe(generation);
    expect((await onA.get(session.id))?.title).toBe('one');
    expect(reads()).toBe(1);

    // B's update of the kept row: seen once its notification arrived.
    await onB.update(session.id, { title: 'two' });
    await until(async () => (await onA.get(session.id))?.title === 'two', 'B`s title seen on A');
    expect(reads()).toBeGreaterThan(1);
  });
});
