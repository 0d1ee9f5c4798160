/**
 * A compat request's run writes its start-up rows (model.resolved, the prompt stack row,
 * prompt.assembled) in the step batch (src/agent/run-loop.ts `prepare`): one commit made when the
 * process next waits for I/O, not one commit each before the model is asked. The step batch is
 * asked for inside the request's own transaction, which becomes the batch (src/store/db.ts
 * `stepBatch`). Pins: by the time the model request reaches the provider, a streamed request has
 * opened one write transaction, and every row it wrote is there afterwards. The
 * step's own batches are not counted: how many there are depends on how the answer's bytes arrive
 * (a batch commits whenever the process waits for the next chunk).
 */
import { describe, expect, it } from 'vitest';
import { reply } from '../helpers/fake-provider';
import { compatServer, sseData } from './compat-helpers';

describe('compat request commits', () => {
  it('ENGINE-COMPAT-2: a streamed compat request makes one commit before its model request, with every row written', async () => {
    const { app, post, provider } = await compatServer([reply().text('one'), reply().text('two')]);
    const body = (content: string) => ({
      model: 'fake/m1',
      stream: true,
      messages: [{ role: 'user', content }],
    });
    // Warm-up: lazy imports and first-use work stay out of the count.
    // Read to its end: a warm run still streaming when its response is dropped is cancelled, and
    // its cancel's statements would land in the count (3 run-row reads on a loaded CI leg).
    const warm = await post('/v1/chat/completions', body('warm'));
    expect(warm.status).toBe(200);
    expect((await sseData(warm)).at(-1)).toBe('[DONE]');
    await app.store.transactions.run(async () => {});

    const builds = await app.observe.promptStack.count();
    const db = app.db;
    const exec = db.exec.bind(db);
    const begins: string[] = [];
    let atModelRequest: number | undefined;
    const push = provider.requests.push.bind(provider.requests);
    provider.requests.push = (...records) => {
      atModelRequest ??= begins.length;
      return push(...records);
    };
    db.exec = (sql: string) => {
      if (/^BEGIN/.test(sql)) begins.push(sql);
      return exec(sql);
    };
    // Batches and async bodies run BEGIN as a statement prepared on the handle (one per SQL text).
    const begin = db.prepare('BEGIN IMMEDIATE');
    const beginRun = begin.run;
    begin.run = (...args: unknown[]) => {
      // The search index's catch-up (src/store/message-search-log.ts) runs two seconds after the
      // warm-up's message writes, whenever that falls on a loaded box: no part of this request.
      if (!new Error().stack?.includes('catchUpIfFree')) begins.push('BEGIN IMMEDIATE');
      return beginRun.apply(begin, args);
    };
    try {
      const response = await post('/v1/chat/completions', body('count'));
      expect(response.status).toBe(200);
      const data = await sseData(response);
      expect(data.at(-1)).toBe('[DONE]');
      // The batch of the last writes commits once the process waits.
      await new Promise((resolve) => setImmediate(resolve));
    } finally {
      db.exec = exec;
      begin.run = beginRun;
    }
    expect(atModelRequest).toBe(1);

    const [run] = await app.runs.list({ limit: 1 });
    expect(run).toMatchObject({ status: 'completed', model: 'fake/m1' });
    const types = (await app.runs.events(run.id)).map((e) => e.type);
    expect(types).toContain('model.resolved');
    expect(types).toContain('prompt.assembled');
    expect(await app.observe.promptStack.count()).toBe(builds + 1);
    expect(db.inTransaction).toBe(false);
  });
});
