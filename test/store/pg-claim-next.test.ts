/**
 * A claim with the run's next event on PostgreSQL (`claim(id, { started, next })`,
 * src/runs/pg-run-ledger.ts, p-pgprep): the claim, `run.started` and the next event (a run's
 * prompt phase, src/agent/run-control.ts `startRun`) in one statement, the next event right after
 * `run.started` at the claim's time, announced in that order; a blocked or lost claim writes
 * none of them and answers as before; and a run started on a PostgreSQL App has its prompt phase
 * written by its claim, not appended again (the events in the same order as before).
 */
import { describe, expect, it } from 'vitest';
import { runStartedPayload } from '../../src/runs/run-started';
import { fakeProvider, reply } from '../helpers/fake-provider';
import { makeTestApp } from '../helpers/make-test-app';
import { migratedDatabase, postgresForFile, recordingClient } from '../helpers/postgres';
import { svcFailure } from '../helpers/svc-failure';
import { runInput as input, ledgerNodes } from './ledger-nodes';

const pg = postgresForFile();
const next = { type: 'phase', payload: { phase: 'prompt' } };

describe.skipIf(!pg.available)('a claim with the run’s next event on PostgreSQL', () => {
  it('STORE-PG-225: claim(id, { started, next }) writes the claim, run.started and the next event in one statement; blocked and lost claims write none', async () => {
    const nodes = await ledgerNodes(pg.cluster(), 60_000);
    try {
      await nodes.sessions('s-next', 's-race');
      const sent: string[] = [];
      const a = nodes.open('rnr_a', 'host-a', 3_600_000, recordingClient(nodes.sql, sent));
      const announced: string[] = [];
      a.onAppend((e) => announced.push(`${e.seq}:${e.type}`));
      const run = await a.create(input('s-next'));
      sent.length = 0;
      announced.length = 0;
      const claimed = await a.claim(run.id, { started: true, next });
      expect(sent).toHaveLength(1);
      if (!claimed.ok || !claimed.started || !claimed.next) throw new Error('not claimed with both events');
      const events = await a.events(run.id);
      expect(events.map((e) => [e.seq, e.type])).toEqual([
        [1, 'run.queued'],
        [2, 'run.started'],
        [3, 'phase'],
      ]);
      expect([claimed.started, claimed.next]).toEqual(events.slice(1));
      expect(claimed.started.payload).toEqual(runStartedPayload(claimed.run));
      expect(claimed.next).toMatchObject({
        payload: { phase: 'prompt' },
        created_at: claimed.run.started_at,
      });
      const text = await nodes.sql.one<{ payload: string }>(
        "SELECT payload FROM agent_run_events WHERE run_id = $1 AND type = 'phase'",
        [run.id],
      );
      expect(text?.payload).toBe('{"phase":"prompt"}');
      expect(announced).toEqual(['2:run.started', '3:phase']);

      // Another run holds the session: nothing written, blocked as before.
      const second = await a.create(input('s-next'));
      const blocked = await a.claim(second.id, { started: true, next });
      expect(blocked.ok ? 'claimed' : blocked.blocking.id).toBe(run.id);
      expect((await a.events(second.id)).map((e) => e.type)).toEqual(['run.queued']);
      // Claimed already: the same conflict, nothing written.
      const again = await svcFailure(a.claim(run.id, { started: true, next }));
      expect([again.code, again.message]).toEqual(['conflict', `run ${run.id} is running, not queued`]);
      expect(await a.events(run.id)).toHaveLength(3);

      // Many tries from two nodes: one claim, one run.started, one phase, consecutive.
      const b = nodes.open('rnr_b', 'host-b', 3_600_000, nodes.other);
      const contested = await a.create(input('s-race'));
      const tries = await Promise.allSettled(
        Array.from({ length: 8 }, (_, i) => (i % 2 ? b : a).claim(contested.id, { started: true, next })),
      );
      const won = tries.flatMap((r) => (r.status === 'fulfilled' && r.value.ok ? [r.value] : []));
      expect(won).toHaveLength(1);
      // A node that does not know the run's session (here b, which did not create it) claims by the
      // locked path, which writes the claim alone and answers without `started`/`next`: its caller
      // appends them (src/agent/run-control.ts). Either way never a second run.started.
      const written = won[0].started
        ? [
            [1, 'run.queued'],
            [2, 'run.started'],
            [3, 'phase'],
          ]
        : [[1, 'run.queued']];
      expect(won[0].next !== undefined).toBe(won[0].started !== undefined);
      expect((await a.events(contested.id)).map((e) => [e.seq, e.type])).toEqual(written);
    } finally {
      await nodes.close();
    }
  });

  it('STORE-PG-226: a run started on a PostgreSQL App has its prompt phase written by its claim; its events as before', async () => {
    const sql = await migratedDatabase(pg.cluster());
    const sent: string[] = [];
    const provider = await fakeProvider([reply().text('hi')]);
    const app = await makeTestApp({
      postgres: recordingClient(sql, sent),
      config: {
        providers: { fake: { type: 'openai-compat', base_url: provider.url } },
        models: { large: 'fake/m1' },
      },
    });
    try {
      const result = await app.agent.run({ prompt: 'hello' });
      expect(result).toMatchObject({ status: 'completed' });
      const run = await app.runs.require(result.run_id);
      const events = await app.runs.events(run.id);
      expect(events.slice(0, 4).map((e) => [e.seq, e.type, e.payload])).toEqual([
        [1, 'run.queued', expect.anything()],
        [2, 'run.started', expect.anything()],
        [3, 'phase', { phase: 'prompt' }],
        [4, 'model.resolved', expect.anything()],
      ]);
      expect(
        events.filter((e) => e.type === 'phase' && (e.payload as { phase?: string }).phase === 'prompt'),
      ).toHaveLength(1);
      const claim = sent.find((t) => t.includes('svc_claim_run_started('));
      expect(claim).toContain('LATERAL svc_append_run_event(');
    } finally {
      await app.close();
      await sql.close();
      await provider.close();
    }
  });
});
