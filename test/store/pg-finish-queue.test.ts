/**
 * A run's finish tells its session's queue on PostgreSQL (`updateAndAppend(…, { queue: true })`,
 * src/runs/pg-run-ledger.ts, migration 41 `svc_session_has_queued`, p-pgcompat): the finish's one
 * statement takes the session's claim lock and answers whether the session has queued runs, read
 * after the lock, so the drain after the finish reads the queue only when there is one. A claim
 * that another node decided while the run was running (its run left queued for the finish's drain)
 * holds that lock until it commits: the finish waits for it and sees the run. On an App, a run's
 * finish with an empty queue reads no queue; a prompt queued behind a running run still starts.
 */
import { describe, expect, it } from 'vitest';
import { fakeProvider, reply } from '../helpers/fake-provider';
import { makeTestApp } from '../helpers/make-test-app';
import { migratedDatabase, postgresForFile, recordingClient } from '../helpers/postgres';
import { until } from '../helpers/until';
import { runInput as input, ledgerNodes } from './ledger-nodes';

const pg = postgresForFile();
const finished = { status: 'completed' as const, finished_at: 2 };
const QUEUE_READ = "status = 'queued' ORDER BY";

describe.skipIf(!pg.available)('a run’s finish tells its session’s queue on PostgreSQL', () => {
  it('STORE-PG-240: the finish answers the queue in its statement, after the claim lock: a claim blocked on another node is seen once it commits', async () => {
    const nodes = await ledgerNodes(pg.cluster(), 60_000);
    try {
      await nodes.sessions('s-finish');
      const sent: string[] = [];
      const a = nodes.open('rnr_a', 'host-a', 3_600_000, recordingClient(nodes.sql, sent));
      const b = nodes.open('rnr_b', 'host-b', 3_600_000, nodes.other);
      if (!a.updateAndAppend) throw new Error('no updateAndAppend on PostgreSQL');

      // Nothing queued: one statement, `queued` false, the finish and its event written.
      const first = await a.create(input('s-finish'));
      expect((await a.claim(first.id, { started: true })).ok).toBe(true);
      sent.length = 0;
      const alone = await a.updateAndAppend(
        first.id,
        finished,
        'run.finished',
        { steps: 1 },
        { queue: true },
      );
      expect(sent).toHaveLength(1);
      expect(sent[0]).toContain('svc_session_has_queued(');
      expect(alone.queued).toBe(false);
      expect(alone.run.status).toBe('completed');
      expect((await a.events(first.id)).map((e) => e.type)).toEqual([
        'run.queued',
        'run.started',
        'run.finished',
      ]);
      // Not asked: answered as before, no `queued`.
      const plain = await a.create(input('s-finish'));
      expect((await a.claim(plain.id, { started: true })).ok).toBe(true);
      expect(await a.updateAndAppend(plain.id, finished, 'run.finished', {})).not.toHaveProperty('queued');

      // Node b queues a run while a's runs: its claim, blocked, holds the claim lock until b commits.
      const running = await a.create(input('s-finish'));
      expect((await a.claim(running.id, { started: true })).ok).toBe(true);
      let release = () => {};
      const held = new Promise<void>((resolve) => {
        release = resolve;
      });
      let queuedId = '';
      let blocked = false;
      const bSide = nodes.other.transaction(async () => {
        const queued = await b.create(input('s-finish'));
        queuedId = queued.id;
        const claim = await b.claim(queued.id, { started: true });
        blocked = !claim.ok;
        await held;
      });
      await until(() => blocked, 'b’s claim to be blocked');
      const finishing = a.updateAndAppend(running.id, finished, 'run.finished', {}, { queue: true });
      // The finish waits for the claim lock (b's transaction, its queued run not committed yet).
      await until(
        async () =>
          ((
            await nodes.sql.one<{ n: number }>(
              "SELECT count(*)::int AS n FROM pg_locks WHERE locktype = 'advisory' AND NOT granted",
            )
          )?.n ?? 0) > 0,
        'the finish to wait for the claim lock',
      );
      release();
      await bSide;
      const answer = await finishing;
      expect(answer.queued).toBe(true);
      expect((await a.queued('s-finish')).map((r) => r.id)).toEqual([queuedId]);
      // The run it saw is still claimable: the drain's claim takes it.
      expect((await a.claim(queuedId, { started: true })).ok).toBe(true);
    } finally {
      await nodes.close();
    }
  });

  it('STORE-PG-241: a run’s finish on a PostgreSQL App reads no queue when it is empty; a prompt queued behind a running run still starts after it', async () => {
    const sql = await migratedDatabase(pg.cluster());
    const sent: string[] = [];
    const provider = await fakeProvider([reply().text('one')]);
    const app = await makeTestApp({
      postgres: recordingClient(sql, sent),
      config: {
        providers: { fake: { type: 'openai-compat', base_url: provider.url } },
        models: { large: 'fake/m1' },
      },
    });
    try {
      const alone = await app.agent.run({ prompt: 'hello' });
      expect(alone).toMatchObject({ status: 'completed' });
      await app.agent.waitIdle(alone.session_id);
      const finish = sent.findIndex((t) => t.includes('svc_session_has_queued('));
      expect(finish).toBeGreaterThanOrEqual(0);
      expect(sent.filter((t) => t.includes(QUEUE_READ))).toEqual([]);

      // A second prompt queued while the first run waits for its model: started by the first's drain.
      let arrived = false;
      provider.push(() => {
        arrived = true;
        return reply().text('two').hang(300);
      });
      provider.push(reply().text('three'));
      const running = await app.agent.send({ sessionId: alone.session_id, prompt: 'two' });
      await until(() => arrived, 'the first run’s model request');
      const queued = await app.agent.send({ sessionId: alone.session_id, prompt: 'three', ifBusy: 'queue' });
      expect(queued.status).toBe('queued');
      const second = await app.agent.wait(queued.run_id);
      expect(second).toMatchObject({ status: 'completed' });
      expect((await app.runs.require(running.run_id)).status).toBe('completed');
    } finally {
      await app.close();
      await sql.close();
      await provider.close();
    }
  });
});
