/**
 * A lone streamed compat request on SQLite: its head and role chunk leave at the check phase after
 * its model request before the start's step batch commits (src/surfaces/http/compat/stream-answer.ts
 * asks the batch to yield, src/store/db.ts `yieldBatch`); the batch still commits every row.
 */
import { Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { preparedOn } from '../../src/store/statement-cache';
import { reply } from '../helpers/fake-provider';
import { compatServer, sseData } from './compat-helpers';

const restore: (() => void)[] = [];
afterEach(() => {
  for (const undo of restore.splice(0)) undo();
});

const body = (content: string) => ({ model: 'fake/m1', stream: true, messages: [{ role: 'user', content }] });

describe('compat head before the step batch COMMIT (SQLite)', () => {
  it('COMPAT-PERF-362: a warm request writes its model request, then its head and role chunk, then the start batch’s COMMIT', async () => {
    const { app, post, url } = await compatServer([reply().text('one'), reply().text('two')]);
    expect((await sseData(await post('/v1/chat/completions', body('warm')))).at(-1)).toBe('[DONE]');
    await new Promise((resolve) => setImmediate(resolve));
    const port = Number(new URL(url).port);
    const order: string[] = [];
    const proto = Socket.prototype as unknown as Record<string, (...args: any[]) => unknown>;
    const generic = proto._writeGeneric;
    proto._writeGeneric = function (this: Socket, writev_: boolean, data: any, ...rest: unknown[]) {
      const text = writev_
        ? (data as { chunk: unknown }[]).map((d) => String(d.chunk)).join('')
        : String(data);
      if (this.localPort === port && text.includes('"role":"assistant"')) order.push('head and role');
      else if (text.includes('POST /') && text.includes('/chat/completions')) order.push('model request');
      return generic.call(this, writev_, data, ...rest);
    };
    // The batches' COMMIT: one statement prepared on the handle (src/store/transaction-statements.ts).
    const commit = preparedOn(app.db, 'COMMIT');
    const run = commit.run;
    commit.run = function (this: typeof commit, ...args: unknown[]) {
      order.push('COMMIT');
      return (run as (...a: unknown[]) => unknown).apply(this, args);
    } as typeof run;
    restore.push(() => {
      proto._writeGeneric = generic;
      commit.run = run;
    });
    const data = await sseData(await post('/v1/chat/completions', body('order')));
    expect(data.at(-1)).toBe('[DONE]');
    // The model request is two writes (its head, its body): runs of one mark counted once.
    const runs = order.filter((mark, i) => mark !== order[i - 1]);
    // ['model request', 'COMMIT', 'head and role', …] on 52e4110: the COMMIT's check-phase hop first.
    expect(runs.slice(0, 3)).toEqual(['model request', 'head and role', 'COMMIT']);
    const requestId = (JSON.parse(data[0] as string) as { id: string }).id;
    await new Promise((resolve) => setImmediate(resolve));
    expect(app.db.inTransaction).toBe(false);
    expect(await app.compatRequests.get(requestId)).toMatchObject({ status: 'completed', http_status: 200 });
  });
});
