/**
 * The held last step ends are the agent service's own (p-heldmulti, src/agent/last-step-end.ts
 * `LastEnds` on `AgentCore`): two Apps in one process, whose runs have the same id (sequential ids,
 * a database each), hold their runs' last step ends at the same moment and each finish writes its
 * own. With one map for the process, keyed by run id, the second hold took the first's place: the
 * first App's finish wrote the second's step end, and the second's finish none.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { agentApp } from '../helpers/agent-harness';
import { reply } from '../helpers/fake-provider';
import { betweenBodyAndFinish } from '../helpers/pg-recorded-app';
import { migratedDatabase, postgresForFile } from '../helpers/postgres';

const pg = postgresForFile();

describe.skipIf(!pg.available)('held last step ends, one set an App', () => {
  const closers: (() => Promise<void>)[] = [];
  afterEach(async () => {
    vi.restoreAllMocks();
    for (const close of closers.splice(0).reverse()) await close();
  });

  it('STORE-PG-590: two Apps in one process whose runs share an id hold their last step ends at once: each finish writes its own (its usage, its model call, step.finished then run.finished), none sees the other’s', async () => {
    const apps = await Promise.all(
      [
        [100, 20],
        [300, 60],
      ].map(async ([input, output]) => {
        const sql = await migratedDatabase(pg.cluster());
        const { app } = await agentApp([reply().text('hello there').usage(input, output)], { postgres: sql });
        closers.push(async () => {
          await app.close();
          await sql.close();
        });
        return { app, sql, input, output };
      }),
    );
    // Both bodies answered (both last step ends held) before either finish goes on.
    let arrived = 0;
    let both!: () => void;
    const together = new Promise<void>((resolve) => {
      both = resolve;
    });
    for (const { app } of apps)
      betweenBodyAndFinish(app, async () => {
        if (++arrived === 2) both();
        await together;
      });
    const sessions = await Promise.all(apps.map(({ app }) => app.sessions.create({ title: 'two apps' })));
    const runs = await Promise.all(
      apps.map(({ app }, i) => app.agent.send({ sessionId: sessions[i].id, prompt: 'go' })),
    );
    // The same run id on both (a database each): one map by run id mixed them up.
    expect(runs[0].run_id).toBe(runs[1].run_id);
    const ended = await Promise.all(apps.map(({ app }, i) => app.agent.wait(runs[i].run_id)));
    expect(ended.map((r) => r.status)).toEqual(['completed', 'completed']);
    for (const [i, { app, sql, input, output }] of apps.entries()) {
      await app.bus.flush();
      const events = await app.runs.events(runs[i].run_id);
      expect(events.map((e) => e.seq)).toEqual(events.map((_, n) => n + 1));
      expect(events.map((e) => e.type).slice(-2)).toEqual(['step.finished', 'run.finished']);
      const session = await app.sessions.require(sessions[i].id);
      expect([session.prompt_tokens, session.completion_tokens]).toEqual([input, output]);
      const assistant = (await app.sessions.messages(sessions[i].id)).find((m) => m.role === 'assistant');
      expect(assistant?.finished_at).not.toBeNull();
      expect(assistant?.usage).toMatchObject({ input_tokens: input, output_tokens: output });
      const calls = await sql.query<{ input_tokens: number }>(
        'SELECT input_tokens FROM model_calls WHERE run_id = $1',
        [runs[i].run_id],
      );
      expect(calls).toEqual([{ input_tokens: input }]);
      expect(await app.runs.require(runs[i].run_id)).toMatchObject({
        status: 'completed',
        result_message_id: assistant?.id,
      });
    }
  });
});
