/**
 * Reads a compat request need not make at its end (issue 17 item 3, issue 18: each is a round
 * trip on PostgreSQL): the compat finish knows its run is there from its own ledger row (the row
 * references the run, ON DELETE CASCADE), not from a read of the run row. The statements of one
 * request after a warm-up are counted through the handle.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { reply } from '../helpers/fake-provider';
import { countStatements } from '../helpers/sqlite-ledger';
import { compatServer, sseData } from './compat-helpers';

afterEach(() => {
  vi.restoreAllMocks();
});

const body = (content: string) => ({ model: 'fake/m1', messages: [{ role: 'user', content }], stream: true });

describe('compat request end reads', () => {
  it('STORE-162: the compat finish appends openai_compat.response without reading the run row; a missing request row finishes nothing', async () => {
    const { app, post } = await compatServer([reply().text('one'), reply().text('two')]);
    // Read to its end: a warm run still streaming when its response is dropped is cancelled, and
    // its cancel's statements would land in the count (3 run-row reads on a loaded CI leg).
    const warm = await post('/v1/chat/completions', body('warm'));
    expect(warm.status).toBe(200);
    expect((await sseData(warm)).at(-1)).toBe('[DONE]');
    const counted = countStatements(app.db);
    const response = await post('/v1/chat/completions', body('count'));
    expect(response.status).toBe(200);
    expect((await sseData(response)).at(-1)).toBe('[DONE]');
    await new Promise((resolve) => setImmediate(resolve));
    const count = (pattern: RegExp) => counted.texts.filter((t) => pattern.test(t)).length;
    // The claim returns the row it wrote and the result answers from the finish's row: no read left.
    expect(count(/^SELECT \* FROM agent_runs WHERE id = \?$/)).toBe(0);
    const [run] = await app.runs.list({ limit: 1 });
    const events = (await app.runs.events(run.id)).filter((e) => e.type === 'openai_compat.response');
    expect(events.map((e) => e.payload)).toEqual([
      expect.objectContaining({ status: 'completed', finish_reason: 'stop', http_status: 200, stream: true }),
    ]);
    // A request whose row is gone (its run's session deleted meanwhile) answers that nothing was finished.
    const outcome = {
      status: 'completed' as const,
      finish_reason: 'stop',
      http_status: 200,
      error: null,
      prompt_tokens: 0,
      completion_tokens: 0,
      finished_at: 1,
    };
    expect(await app.compatRequests.finish('chatcmpl-missing', outcome)).toBe(false);
  });
});
