/**
 * A warm compat request's three SQLite transaction bodies (its preparation, its step's end, its
 * run's finish) run with their token, not in an async scope (`StoreTransactions.runWith`,
 * p-txtoken): no `AsyncLocalStorage` scope is entered and Node 20's promise hooks are never turned
 * on, while the request's writes stay where they were: the send and the request's row join the
 * preparation's body through its token, and its run's start-up step batch takes that body over.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { describe, expect, it } from 'vitest';
import { setTxCheck } from '../../src/store/tx-check';
import { reply } from '../helpers/fake-provider';
import { compatServer, LONE_RUN_EVENTS, sseData } from './compat-helpers';

const body = (content: string) => ({ model: 'fake/m1', stream: true, messages: [{ role: 'user', content }] });

describe('compat request bodies without an async scope (SQLite)', () => {
  it('COMPAT-PERF-250: a warm streamed compat request enters no AsyncLocalStorage scope and turns no promise hooks on; one BEGIN before its model request, its rows and events as before', async () => {
    const { app, post, provider } = await compatServer([reply().text('one'), reply().text('two')]);
    const warm = await post('/v1/chat/completions', body('warm'));
    expect((await sseData(warm)).at(-1)).toBe('[DONE]');
    await new Promise((resolve) => setImmediate(resolve));

    // What production enters: the missed-token check's own scopes off (src/store/tx-check.ts).
    const checkWas = setTxCheck(false);
    const proto = AsyncLocalStorage.prototype as unknown as {
      run: AsyncLocalStorage<unknown>['run'];
      _enable(): void;
    };
    const run = proto.run;
    const enable = proto._enable;
    let scopes = 0;
    let enables = 0;
    proto.run = function (this: AsyncLocalStorage<unknown>, ...args: Parameters<typeof run>) {
      scopes++;
      return run.apply(this, args) as ReturnType<typeof run>;
    } as typeof run;
    proto._enable = function (this: { enabled: boolean }) {
      if (!this.enabled) enables++;
      enable.call(this);
    };
    // BEGINs before the model request: the preparation's body, its run's start-up writes in it.
    const begin = app.db.prepare('BEGIN IMMEDIATE');
    const beginRun = begin.run;
    let begins = 0;
    let atModelRequest: number | undefined;
    begin.run = (...args: unknown[]) => {
      if (!new Error().stack?.includes('catchUpIfFree')) begins++;
      return beginRun.apply(begin, args);
    };
    const push = provider.requests.push.bind(provider.requests);
    provider.requests.push = (...records) => {
      atModelRequest ??= begins;
      return push(...records);
    };
    let requestId = '';
    try {
      const response = await post('/v1/chat/completions', body('count'));
      const data = await sseData(response);
      expect(data.at(-1)).toBe('[DONE]');
      requestId = (JSON.parse(data[0] as string) as { id: string }).id;
      await new Promise((resolve) => setImmediate(resolve));
    } finally {
      proto.run = run;
      proto._enable = enable;
      begin.run = beginRun;
      setTxCheck(checkWas);
    }
    // 3 and 3 on 2e2980a (each body in its scope, each scope turning the hooks on).
    expect(scopes).toBe(0);
    expect(enables).toBe(0);
    expect(atModelRequest).toBe(1);
    const row = await app.compatRequests.get(requestId);
    expect(row).toMatchObject({ status: 'completed', finish_reason: 'stop', http_status: 200, error: null });
    const events = await app.runs.events(row?.run_id ?? '');
    expect(events.map((e) => e.type)).toEqual(LONE_RUN_EVENTS);
    expect(app.db.inTransaction).toBe(false);
  });
});
