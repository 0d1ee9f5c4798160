/**
 * A run's finish on a PostgreSQL App is one statement of its own (issue 18, item 6): the row and
 * its `run.finished` event were already one statement (`updateAndAppend`), but the finish ran in
 * a store transaction, so BEGIN went out with it and COMMIT after its answer (two statements and a
 * round trip of a compat request's ≈ 26). Now it is sent outside one (`transactions.together`):
 * no BEGIN before it nor COMMIT after it on its connection, the run's row and its one
 * `run.finished` are there for another connection once `wait` resolves, and the ledger's events
 * keep their order. Statements seen with a spy on pg's `Client.query` (no timing).
 */
import pg from 'pg';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { agentApp } from '../helpers/agent-harness';
import { reply } from '../helpers/fake-provider';
import { postgresForFile, twoNodes } from '../helpers/postgres';

const cluster = postgresForFile();

afterEach(() => {
  vi.restoreAllMocks();
});

describe.skipIf(!cluster.available)('a run finish on PostgreSQL', () => {
  it('STORE-PG-202: the run finish is one statement with no BEGIN or COMMIT around it; another node reads it after wait', async () => {
    const nodes = await twoNodes(cluster.cluster());
    const { app } = await agentApp([reply().text('done'), reply().text('again')], { postgres: nodes.sql });
    const sent: { connection: unknown; text: string }[] = [];
    const query = pg.Client.prototype.query;
    vi.spyOn(pg.Client.prototype, 'query').mockImplementation(function (this: pg.Client, ...args: unknown[]) {
      const [config] = args as [string | { text: string }];
      sent.push({ connection: this, text: typeof config === 'string' ? config : config.text });
      return (query as (...a: unknown[]) => unknown).apply(this, args) as never;
    } as never);
    try {
      const session = await app.sessions.create({ title: 'finish' });
      for (const prompt of ['one', 'two']) {
        const { run_id: runId } = await app.agent.send({ sessionId: session.id, prompt });
        expect((await app.agent.wait(runId)).status).toBe('completed');
        const seen = await nodes.other.query<{ status: string; types: string[] }>(
          `SELECT r.status, (SELECT array_agg(e.type ORDER BY e.seq) FROM agent_run_events e
                              WHERE e.run_id = r.id) AS types
             FROM agent_runs r WHERE r.id = $1`,
          [runId],
        );
        expect(seen[0].status).toBe('completed');
        expect(seen[0].types.filter((type) => type === 'run.finished')).toHaveLength(1);
        expect(seen[0].types.at(-1)).toBe('run.finished');
        expect(seen[0].types[0]).toBe('run.queued');
        await app.agent.waitIdle(session.id);
      }
      const finishes = sent
        .map((statement, index) => ({ ...statement, index }))
        // A root run's finish reads its session's queue first in it (p-pgcompat, `WITH q …`).
        .filter(({ text }) => /^WITH (q AS .*)?r AS \(UPDATE agent_runs SET status/s.test(text));
      expect(finishes.length).toBeGreaterThanOrEqual(2);
      for (const finish of finishes) {
        const onConnection = sent.filter((statement) => statement.connection === finish.connection);
        const at = onConnection.indexOf(sent[finish.index]);
        expect(onConnection[at - 1]?.text).not.toBe('BEGIN');
        expect(onConnection[at + 1]?.text).not.toBe('COMMIT');
      }
    } finally {
      await app.close();
      await nodes.close();
    }
  });
});
