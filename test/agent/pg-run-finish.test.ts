/**
 * A run's end on a PostgreSQL App (issue 19): `agent.wait` resolves once the run's row and its
 * `run.finished` ledger event are committed, so a reader on another connection (another node, an
 * SSE client) that the waiter wakes sees them. The runs are started with `drain` (outside `send`'s
 * transaction) so that only the finish is under test; several runs, as the race is a window.
 *
 * `startRun` records the finish (row, ledger, events, the idle state) in one transaction and only
 * after its commit wakes the waiters (`core.settle`), starts the next queued prompt and notifies
 * the idle waiters (src/agent/run-control.ts `afterFinish`). Before, all of it ran inside the
 * transaction and the woken reader saw the run `running` without `run.finished` (two runs in three).
 */
import { describe, expect, it } from 'vitest';
import { agentApp, echoTool } from '../helpers/agent-harness';
import { reply } from '../helpers/fake-provider';
import { postgresForFile, twoNodes } from '../helpers/postgres';

const pg = postgresForFile();
const RUNS = 6;

describe.skipIf(!pg.available)('a run finish on PostgreSQL', () => {
  it('STORE-PG-agent: wait resolves after the finish is committed: another node reads run.finished', async () => {
    const nodes = await twoNodes(pg.cluster());
    const script = Array.from({ length: RUNS }, () => [
      reply().toolCall('echo', { text: 'hi' }),
      reply().text('done'),
    ]).flat();
    const { app } = await agentApp(script, { extraTools: [echoTool], postgres: nodes.sql });
    try {
      const session = await app.sessions.create({ title: 'finish' });
      for (let i = 0; i < RUNS; i++) {
        await app.agent.enqueue({ sessionId: session.id, prompt: `run ${i}`, start: false });
        const runId = await app.agent.drain(session.id);
        if (!runId) throw new Error('drain started no run');
        expect((await app.agent.wait(runId)).status).toBe('completed');
        const seen = await nodes.other.query<{ status: string; finished: number }>(
          `SELECT r.status, (SELECT count(*) FROM agent_run_events e
                              WHERE e.run_id = r.id AND e.type = 'run.finished')::int AS finished
             FROM agent_runs r WHERE r.id = $1`,
          [runId],
        );
        expect(seen).toEqual([{ status: 'completed', finished: 1 }]);
        // The finish goes on after its waiters: it drains the session's queue. Until then a prompt
        // enqueued now may be started by that drain instead of the next iteration's `drain`.
        await app.agent.waitIdle(session.id);
      }
    } finally {
      await app.close();
      await nodes.close();
    }
  });
});
