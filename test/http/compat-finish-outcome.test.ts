/**
 * A completed compat request's ledger row end and its `openai_compat.response` event on SQLite are
 * written by its run's finish, in the finish's transaction (`AgentService.finishWith`, the
 * repository's `finishInRunFinish.now`; p-syncrepo): the request opens three async transaction
 * bodies (its preparation, its step's end, its run's finish), not four, and each body toggles
 * Node 20's promise hooks (src/store/async-scope.ts). The row and the event are the ones the answer's
 * end wrote before: the event right after `run.finished`, the row ended before `[DONE]`. A finish
 * whose compat write fails leaves it to the answer's end, as before. The agent's own run events are
 * appended with SQLite's synchronous `RunLedger.appendNow` (no promise, no await each).
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { describe, expect, it } from 'vitest';
import { setTxCheck } from '../../src/store/tx-check';
import { reply } from '../helpers/fake-provider';
import { compatServer, sseData } from './compat-helpers';

const body = (content: string) => ({ model: 'fake/m1', stream: true, messages: [{ role: 'user', content }] });

/** The `openai_compat.response` event's place among the run's events, and the row. */
async function ended(app: Awaited<ReturnType<typeof compatServer>>['app'], requestId: string) {
  const row = await app.compatRequests.get(requestId);
  const events = await app.runs.events(row?.run_id ?? '');
  const finished = events.find((e) => e.type === 'run.finished');
  const responses = events.filter((e) => e.type === 'openai_compat.response');
  return { row, finished, responses, last: events.at(-1) };
}

describe('compat outcome in the run finish (SQLite)', () => {
  it('COMPAT-PERF-210: a streamed compat request opens its transaction bodies (none in an async scope); its row ends in the run finish, the event after run.finished', async () => {
    const { app, post } = await compatServer([reply().text('one'), reply().text('two')]);
    const warm = await post('/v1/chat/completions', body('warm'));
    expect((await sseData(warm)).at(-1)).toBe('[DONE]');
    await new Promise((resolve) => setImmediate(resolve));

    // What production enters: the missed-token check's own scopes off (src/store/tx-check.ts).
    const checkWas = setTxCheck(false);
    const proto = AsyncLocalStorage.prototype;
    const run = proto.run;
    let scopes = 0;
    proto.run = function (this: AsyncLocalStorage<unknown>, ...args: Parameters<typeof run>) {
      scopes++;
      return run.apply(this, args) as ReturnType<typeof run>;
    } as typeof run;
    let rowAtDone: Awaited<ReturnType<typeof app.compatRequests.get>>;
    let requestId = '';
    try {
      const response = await post('/v1/chat/completions', body('count'));
      const data = await sseData(response);
      expect(data.at(-1)).toBe('[DONE]');
      requestId = (JSON.parse(data[0] as string) as { id: string }).id;
      rowAtDone = await app.compatRequests.get(requestId);
      await new Promise((resolve) => setImmediate(resolve));
    } finally {
      proto.run = run;
      setTxCheck(checkWas);
    }
    // None (4 on 4b2467a: the outcome's own body; 3 on 2e2980a: its preparation's, its step's end's and
    // its run's finish's, with no scope since p-txtoken, COMPAT-PERF-250).
    expect(scopes).toBe(0);
    expect(rowAtDone).toMatchObject({ status: 'completed', finish_reason: 'stop', http_status: 200 });
    const { row, finished, responses, last } = await ended(app, requestId);
    expect(row).toMatchObject({ status: 'completed', finish_reason: 'stop', http_status: 200, error: null });
    expect(row?.finished_at).not.toBeNull();
    expect(responses).toHaveLength(1);
    expect(responses[0]?.seq).toBe((finished?.seq ?? 0) + 1);
    expect(last?.type).toBe('openai_compat.response');
    expect(responses[0]?.payload).toEqual({
      request_id: requestId,
      status: 'completed',
      finish_reason: 'stop',
      http_status: 200,
      stream: true,
    });
    expect(app.db.inTransaction).toBe(false);
  });

  it('COMPAT-PERF-211: a run finish whose compat write fails finishes alone; the answer end writes the row and its one event', async () => {
    const { app, post } = await compatServer([reply().text('one')]);
    const repository = app.compatRequests;
    const own = repository.finishInRunFinish;
    expect(own).toBeDefined();
    let tried = 0;
    repository.finishInRunFinish = (requestId, outcome) => {
      const write = own?.call(repository, requestId, outcome);
      if (!write) throw new Error('no write');
      return {
        ...write,
        now: () => {
          tried++;
          throw new Error('compat row write failed');
        },
      };
    };
    try {
      const response = await post('/v1/chat/completions', body('fails'));
      const data = await sseData(response);
      expect(data.at(-1)).toBe('[DONE]');
      const requestId = (JSON.parse(data[0] as string) as { id: string }).id;
      await new Promise((resolve) => setImmediate(resolve));
      expect(tried).toBe(1);
      const { row, finished, responses, last } = await ended(app, requestId);
      expect(finished?.payload).toMatchObject({ status: 'completed' });
      expect(row).toMatchObject({ status: 'completed', finish_reason: 'stop', http_status: 200 });
      expect(responses).toHaveLength(1);
      expect(last?.type).toBe('openai_compat.response');
      expect(app.db.inTransaction).toBe(false);
    } finally {
      repository.finishInRunFinish = own;
    }
  });

  it('COMPAT-PERF-212: a streamed compat request appends its agent run events with no promise on SQLite, the same events in the same order', async () => {
    const { app, post } = await compatServer([reply().text('one'), reply().text('two')]);
    const warm = await post('/v1/chat/completions', body('warm'));
    expect((await sseData(warm)).at(-1)).toBe('[DONE]');
    const runs = app.runs;
    const append = runs.append;
    const now = runs.appendNow;
    expect(now).toBeDefined();
    const seen: string[] = [];
    runs.append = (runId, type, payload) => {
      seen.push(`promise ${type}`);
      return append.call(runs, runId, type, payload);
    };
    runs.appendNow = (runId, type, payload) => {
      seen.push(`now ${type}`);
      return (now as NonNullable<typeof now>).call(runs, runId, type, payload);
    };
    let runId = '';
    try {
      const data = await sseData(await post('/v1/chat/completions', body('count')));
      expect(data.at(-1)).toBe('[DONE]');
      const requestId = (JSON.parse(data[0] as string) as { id: string }).id;
      runId = (await app.compatRequests.get(requestId))?.run_id ?? '';
      await new Promise((resolve) => setImmediate(resolve));
    } finally {
      runs.append = append;
      runs.appendNow = now;
    }
    // The compat surface's own start event still goes through the async port (Left, p-syncrepo).
    expect(seen).toEqual([
      'now run.started',
      'now phase',
      'now model.resolved',
      'promise openai_compat.request',
      'now prompt.assembled',
      'now phase',
      'now step.finished',
      'now run.finished',
      'now openai_compat.response',
    ]);
    // The run's row and `run.queued` from its create, then these, as appended.
    expect((await app.runs.events(runId)).map((e) => e.type)).toEqual([
      'run.queued',
      ...seen.map((entry) => entry.split(' ')[1]),
    ]);
  });
});
