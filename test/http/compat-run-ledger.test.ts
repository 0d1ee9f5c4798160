/**
 * What a compat request's run writes to the run ledger on SQLite (issue 17 item 3, p-ledger2): the
 * run row, created with the model the surface resolved, is not updated again to name that model;
 * `model.resolved` is still recorded, and the ledger keeps every event in its order.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { reply } from '../helpers/fake-provider';
import { countStatements } from '../helpers/sqlite-ledger';
import { compatServer, LONE_RUN_EVENTS } from './compat-helpers';

afterEach(() => {
  vi.restoreAllMocks();
});

describe('a compat request’s run ledger', () => {
  it('STORE-121 the run row is not updated to name the model it was created with; its events stay', async () => {
    const { app, client } = await compatServer([reply().text('warm'), reply().text('one').usage(10, 2)]);
    const ask = () =>
      client.chat.completions.create({ model: 'fake/m1', messages: [{ role: 'user', content: 'hello' }] });
    await ask();
    const counted = countStatements(app.db);
    expect((await ask()).choices[0].message.content).toBe('one');
    const runUpdates = counted.texts.filter((t) => t.startsWith('UPDATE agent_runs SET'));
    vi.restoreAllMocks();
    expect(runUpdates.filter((t) => t.startsWith('UPDATE agent_runs SET model'))).toEqual([]);
    // The claim and the finish: the run's last step writes no run row, its finish writes the
    // totals (COMPAT-PERF-489, p-sqlprof5; a step end that does reads only the cancel flag back,
    // STORE-122).
    expect(runUpdates).toHaveLength(2);
    expect(runUpdates.filter((t) => t.endsWith('RETURNING cancel_requested'))).toHaveLength(0);

    const [run] = await app.runs.list({ limit: 1 });
    expect(run).toMatchObject({ model: 'fake/m1', status: 'completed', origin: 'openai_compat', steps: 1 });
    const events = await app.runs.events(run.id);
    expect(events.map((e) => [e.seq, e.type])).toEqual(LONE_RUN_EVENTS.map((type, i) => [i + 1, type]));
    const resolved = events.find((e) => e.type === 'model.resolved');
    expect(resolved?.payload).toMatchObject({ model: 'fake/m1', source: 'explicit' });
  });
});
