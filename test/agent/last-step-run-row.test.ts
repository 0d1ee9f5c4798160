/**
 * A run's last step writes no run row on SQLite (issue 17 item 3, p-sqlprof5): its end's
 * `UPDATE agent_runs SET steps … RETURNING cancel_requested` is left out where the run's finish
 * follows here, since the finish's UPDATE writes the same totals (steps, usage, cost) and no step
 * reads the cancel flag after it (src/agent/end-step.ts `lastStepOfRun`). Pins: a compat request
 * runs two run UPDATEs (its claim, its finish), not three, and the stored row holds the step's
 * totals; a run with a tool step still writes that step's end (the next step takes its cancel
 * flag from it, no read), and its finish holds both steps' totals.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { agentApp, echoTool } from '../helpers/agent-harness';
import { reply } from '../helpers/fake-provider';
import { countStatements } from '../helpers/sqlite-ledger';
import { compatServer, LONE_RUN_EVENTS, settledNewestRun } from '../http/compat-helpers';

afterEach(() => {
  vi.restoreAllMocks();
});

const stepEndUpdates = (texts: string[]) =>
  texts.filter(
    (t) => t.startsWith('UPDATE agent_runs SET steps') && t.endsWith('RETURNING cancel_requested'),
  );

describe('a run’s last step end on SQLite', () => {
  it('COMPAT-PERF-489: a compat request’s run is updated by its claim and its finish only; the row holds the step’s totals', async () => {
    const { app, client } = await compatServer([reply().text('warm'), reply().text('one').usage(10, 2)]);
    const ask = () =>
      client.chat.completions.create({ model: 'fake/m1', messages: [{ role: 'user', content: 'hello' }] });
    await ask();
    const counted = countStatements(app.db);
    expect((await ask()).choices[0].message.content).toBe('one');
    vi.restoreAllMocks();
    const runId = await settledNewestRun(app);
    const runUpdates = counted.texts.filter((t) => t.startsWith('UPDATE agent_runs SET'));
    expect(stepEndUpdates(counted.texts)).toEqual([]);
    expect(runUpdates).toHaveLength(2);
    expect(runUpdates[0]).toMatch(/^UPDATE agent_runs SET status = 'running'/);
    expect(runUpdates[1]).toMatch(/^UPDATE agent_runs SET status = \?.* steps = \?, input_tokens = \?/);
    // Nothing wrote the totals before the finish (the held ones were taken by it).
    expect(runUpdates.filter((t) => t.includes('steps = ?'))).toHaveLength(1);
    const run = await app.runs.get(runId);
    expect(run).toMatchObject({
      status: 'completed',
      steps: 1,
      usage: { input_tokens: 10, output_tokens: 2 },
    });
    const events = await app.runs.events(runId);
    expect(events.map((e) => e.type)).toEqual(LONE_RUN_EVENTS);
    expect(events.find((e) => e.type === 'step.finished')?.payload).toMatchObject({
      step: 1,
      usage: { input_tokens: 10, output_tokens: 2 },
    });
  });

  it('COMPAT-PERF-490: a tool step’s end still writes the run row; the finish holds both steps’ totals', async () => {
    const { app } = await agentApp(
      [reply().toolCall('echo', { text: 'hi' }).usage(5, 1), reply().text('done').usage(7, 2)],
      { extraTools: [echoTool], extraConfig: { options: { tool_exposure: 'all' } } },
    );
    const counted = countStatements(app.db);
    const result = await app.agent.run({ prompt: 'go', yolo: true });
    for (let turn = 0; turn < 20 && app.db.inTransaction; turn++)
      await new Promise((resolve) => setImmediate(resolve));
    vi.restoreAllMocks();
    expect(result.status).toBe('completed');
    // The tool step's end (its cancel flag serves the next step's preparation); not the last's.
    expect(stepEndUpdates(counted.texts)).toHaveLength(1);
    const [run] = await app.runs.list({ limit: 1 });
    expect(run).toMatchObject({
      status: 'completed',
      steps: 2,
      usage: { input_tokens: 12, output_tokens: 3 },
    });
    const finished = (await app.runs.events(run.id)).filter((e) => e.type === 'step.finished');
    expect(finished.map((e) => (e.payload as { step: number }).step)).toEqual([1, 2]);
  });
});
