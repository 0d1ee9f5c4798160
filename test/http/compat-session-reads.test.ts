/**
 * The agent path of a compat request reads no row it just wrote or already read (issue 17 item 3):
 * the new session's row travels with it from its INSERT to the run's launch (the send, the queue,
 * the run.started event) and its queue is the new run alone, the run's result is its finished
 * row, a session without a parent is its own family root (no recursive query), and the claimed
 * run's session is known to the ledger's appends (no `sessionOf`). The statements of one request
 * after a warm-up are counted through the handle; a bound session changed by another writer
 * between two requests is still seen by the next request.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { reply } from '../helpers/fake-provider';
import { countStatements } from '../helpers/sqlite-ledger';
import { compatServer, sseData } from './compat-helpers';

afterEach(() => {
  vi.restoreAllMocks();
});

const body = (content: string) => ({ model: 'fake/m1', messages: [{ role: 'user', content }] });

describe('compat request reads', () => {
  it('ENGINE-COMPAT-6: a compat request reads its new session row at most twice, no family root query, no run session lookup', async () => {
    const { app, post } = await compatServer([reply().text('one'), reply().text('two')]);
    // Warm-up: lazy imports and first-use work stay out of the count.
    expect((await post('/v1/chat/completions', body('warm'))).status).toBe(200);
    const counted = countStatements(app.db);
    // Streamed, as the compat bench asks (a JSON answer's wait reads the run once more first).
    const response = await post('/v1/chat/completions', { ...body('count'), stream: true });
    expect(response.status).toBe(200);
    expect((await sseData(response)).at(-1)).toBe('[DONE]');
    await new Promise((resolve) => setImmediate(resolve));
    const count = (pattern: RegExp) => counted.texts.filter((t) => pattern.test(t)).length;
    expect(count(/^SELECT \* FROM sessions WHERE id = \?$/)).toBeLessThanOrEqual(2);
    expect(count(/^WITH RECURSIVE up\(/)).toBe(0);
    expect(count(/^SELECT session_id FROM agent_runs WHERE id = \?$/)).toBe(0);
    // The new session's queue is its run alone at the send; the run's finish tells that it is
    // empty, so the drain after it reads nothing (p-sqlcpu3, COMPAT-PERF-70; it read it once).
    expect(count(/^SELECT \* FROM agent_runs WHERE session_id = \? AND status = 'queued'/)).toBe(0);
    // The run's result comes from the row its finish wrote (the compat ledger's check is gone
    // too: STORE-162 in compat-finish-reads.test.ts).
    expect(count(/^SELECT \* FROM agent_runs WHERE id = \?$/)).toBeLessThanOrEqual(2);
    // The answers are the same: the run's family root is its own session, run.started was
    // appended, the result is the stored row's.
    const [run] = await app.runs.list({ limit: 1 });
    expect(run.family_session_id).toBe(run.session_id);
    expect((await app.runs.events(run.id)).map((e) => e.type)).toContain('run.started');
    const result = await app.agent.result(run.id);
    expect(result).toMatchObject({
      status: run.status,
      steps: run.steps,
      usage: run.usage,
      cost: run.cost,
      model: run.model,
      started_at: run.started_at,
      finished_at: run.finished_at,
      text: 'two',
    });
  });

  it('ENGINE-COMPAT-7: a bound session changed by another writer between two requests is seen by the next one', async () => {
    const { app, post } = await compatServer([reply().text('one'), reply().text('two')]);
    const first = await post('/v1/chat/completions', body('first'));
    const sessionId = first.headers.get('x-svc-session-id') as string;
    expect(sessionId).toBeTruthy();
    // Another process's write: straight to the table, nothing in this process hears of it.
    app.db.prepare('UPDATE sessions SET agent = ? WHERE id = ?').run('plan', sessionId);
    const second = await post('/v1/chat/completions', body('second'), { 'x-svc-session-id': sessionId });
    expect(second.status).toBe(200);
    const [run] = await app.runs.list({ limit: 1 });
    expect(run.session_id).toBe(sessionId);
    expect(run.agent).toBe('plan');
  });
});
