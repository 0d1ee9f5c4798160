/**
 * Session rows kept in memory on PostgreSQL (issue 18 item 6): a tool's read of its session
 * (`sessions.get`) was a round trip every step for a row this process had just written (the
 * step's message append answers it). Migration 43 puts `sessions` under the change notifications
 * of migration 35; a node keeps a row while no other node's write is notified and it wrote none
 * since (src/sessions/pg-kept-sessions.ts). Pinned here, on a throwaway cluster:
 * - kept from a read or an own write's answer; own writes seen at once, their own notifications
 *   not counted; another node's write seen once its notification arrived (STORE-PG-250);
 * - no LISTEN (before it, after it is lost): every `get` reads; a write in a transaction is not
 *   kept (STORE-PG-251);
 * - a run's tool steps on a PostgreSQL App read no session row for the tool (STORE-PG-252).
 * Nothing is timed: waits are bounded loops on what the node observes.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createPostgresSessionStore } from '../../src/sessions/pg-session-store';
import { tableChanges } from '../../src/store/postgres/table-changes';
import { agentApp } from '../helpers/agent-harness';
import { reply } from '../helpers/fake-provider';
import { driverStatements, followingNodes, migratedDatabase, postgresForFile } from '../helpers/postgres';
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

describe.skipIf(!pg.available)('session rows kept on PostgreSQL (migration 43)', () => {
  const closers: (() => Promise<void>)[] = [];
  afterEach(async () => {
    vi.unstubAllEnvs();
    for (const close of closers.splice(0).reverse()) await close();
  });

  /** Node A (recording its statements) and node B on one database; A follows the notifications. */
  async function nodes() {
    const { both, a, sent, changes, follow } = await followingNodes(pg.cluster(), closers);
    const onA = createPostgresSessionStore({ sql: a, clock: clock(), ids: ids(), workspace: '/w' });
    const onB = createPostgresSessionStore({ sql: both.other, clock: clock(), ids: ids(), workspace: '/w' });
    /** Every notification A's own connections sent so far has arrived (they come in commit order). */
    const ownNotificationsIn = async () => {
      const before = changes.generation('findings');
      await both.sql.run("SELECT pg_notify('svc_table_changes', 'findings')");
      await until(() => changes.generation('findings') !== before, 'A`s own notification heard');
    };
    const reads = () => sent.filter((t) => READ.test(t)).length;
    return { both, a, changes, onA, onB, follow, ownNotificationsIn, reads };
  }

  it('STORE-PG-250: kept from reads and own writes, own notifications not counted, another node`s write seen after its notification', async () => {
    const { onA, onB, follow, ownNotificationsIn, reads } = await nodes();
    await (await follow()).started;

    // An own write's answer is kept: no read, now or after its own notification arrived.
    const session = await onA.create({ title: 'one' });
    await ownNotificationsIn();
    expect((await onA.get(session.id))?.title).toBe('one');
    expect(reads()).toBe(0);

    // Own writes are seen at once (each answers the row), the update and a message append alike
    // (the update reads the row first, from the database: its read-modify-write).
    await onA.update(session.id, { title: 'two', metadata: { workflow_phase: 'planning' } });
    expect(reads()).toBe(1);
    expect((await onA.get(session.id))?.metadata.workflow_phase).toBe('planning');
    await onA.appendMessage({ session_id: session.id, role: 'user', parts: [{ type: 'text', text: 'hi' }] });
    const afterAppend = (await onB.get(session.id))?.updated_at;
    await ownNotificationsIn();
    expect((await onA.get(session.id))?.updated_at).toBe(afterAppend);
    expect(reads()).toBe(1);

    // Another node's write: seen once its notification arrived, then kept again after one read.
    await onB.update(session.id, { title: 'three' });
    await until(async () => (await onA.get(session.id))?.title === 'three', 'B`s title seen on A');
    // A read between B's commit and its notification kept the row until the notification came:
    // once A's own later notification is in, B's is too (they arrive in commit order).
    await ownNotificationsIn();
    await onA.get(session.id);
    const at = reads();
    expect(at).toBeGreaterThan(0);
    expect((await onA.get(session.id))?.title).toBe('three');
    expect(reads()).toBe(at);

    // Another node's append moves updated_at: seen likewise.
    await onB.appendMessage({ session_id: session.id, role: 'user', parts: [{ type: 'text', text: 'b' }] });
    const fromB = (await onB.get(session.id))?.updated_at;
    await until(async () => (await onA.get(session.id))?.updated_at === fromB, 'B`s append seen on A');

    // A usage update by this node answers the row too; a delete is seen at once.
    await onA.addUsage(session.id, { input_tokens: 5, output_tokens: 2, cost: 0 });
    expect((await onA.get(session.id))?.prompt_tokens).toBe(5);
    await onA.delete(session.id);
    expect(await onA.get(session.id)).toBeUndefined();
  });

  it('STORE-PG-251: no LISTEN, no memory; a write in a transaction is not kept before its end', async () => {
    const { a, onA, onB, follow, reads } = await nodes();
    const session = await onB.create({ title: 'one' });

    // Not listening yet: every get reads.
    await onA.get(session.id);
    await onA.get(session.id);
    expect(reads()).toBe(2);

    const following = follow();
    await following.started;
    await onA.get(session.id);
    await onA.get(session.id);
    expect(reads()).toBe(3);

    // An update inside a transaction: not kept while it is open, the committed row read after.
    await a.transaction(async () => {
      await onA.update(session.id, { title: 'in tx' });
    });
    const before = reads();
    expect((await onA.get(session.id))?.title).toBe('in tx');
    expect(reads()).toBe(before + 1);

    // The LISTEN stopped: nothing kept is answered, every get reads again.
    await following.stop();
    const stopped = reads();
    await onA.get(session.id);
    await onA.get(session.id);
    expect(reads()).toBe(stopped + 2);
  });

  it('STORE-PG-252: a run`s tool steps on a PostgreSQL App read no session row for the tool (a step whose start is held for its end, p-heldstep: the first step`s call reads it once, no row kept yet)', async () => {
    for (const once of ['0', '1']) {
      vi.stubEnv('SVC_STEP_ONCE', once);
      const sql = await migratedDatabase(pg.cluster());
      // Three: a fourth call with the same input and result would stop the run (loop detection).
      const steps = 3;
      const turns = [];
      for (let i = 0; i < steps; i++) turns.push(reply().toolCall('get_workflow_phase', {}).usage(100, 20));
      turns.push(reply().text('done').usage(130, 10));
      // The node's heartbeat (every 3 s by default) is a statement of its own: on a loaded box one fell
      // between the session read and the step's statement (19, not 18). An hour apart, none does. The
      // run's cancel poll (every second) is left out of `driverStatements`: it too fell between once.
      const { app } = await agentApp(turns, {
        postgres: sql,
        extraConfig: { store: { node_heartbeat_ms: 3_600_000, node_stale_ms: 7_200_000 } },
      });
      closers.push(async () => {
        await app.close();
        await sql.close();
      });
      await until(() => tableChanges(sql).isListening(), 'the App`s LISTEN in place');
      const session = await app.sessions.create({ title: 'steps' });
      await app.sessions.update(session.id, { metadata: { workflow_phase: 'planning' } });
      const driver = driverStatements();
      let sent: string[];
      try {
        const { run_id } = await app.agent.send({ sessionId: session.id, prompt: 'go' });
        const done = await app.agent.wait(run_id);
        expect(done.error ?? done.status).toBe('completed');
        sent = [...driver.sent];
      } finally {
        driver.restore();
      }
      // From the first tool call's message on: no read of the session row. With the step's start
      // held for its end, the first call reads it (the prompt's append was a transaction: no row
      // kept), before its step's one statement; none after.
      const firstCall = sent.findIndex((t) => /INSERT INTO messages/.test(t));
      const firstWhole = sent.findIndex((t) => /a AS \(INSERT INTO messages/.test(t));
      expect(firstCall).toBeGreaterThan(-1);
      expect(sent.slice(firstCall).filter((t) => READ.test(t))).toHaveLength(once === '1' ? 1 : 0);
      const read = sent.findIndex((t, i) => i > firstCall && READ.test(t));
      if (once === '1') {
        // Nothing of the step between its read and its statement. The recommendation ledger's read
        // of its pending rows is the recorder's, a bus follower of `run.started` that runs on its
        // own: on a loaded box it fell between the two once.
        expect(firstWhole).toBeGreaterThan(read);
        const between = sent.slice(read + 1, firstWhole).filter((t) => !/\bFROM recommendations\b/.test(t));
        expect(between, `between the read and the step: ${between.join(' | ')}`).toEqual([]);
      } else expect(firstWhole).toBe(-1);
      // The tool answered from the row as it is.
      const messages = await app.sessions.messages(session.id);
      const results = JSON.stringify(messages.filter((m) => m.role === 'tool').map((m) => m.parts));
      expect(results.match(/planning/g)?.length).toBe(steps);
    }
  });
});
