/**
 * A lone compat request on SQLite (p-promptheld, issue 17 item 3): its run's prompt stack row and
 * `prompt.assembled` are held from its preparation and written after its model request, in the
 * start's step batch (right before its COMMIT; src/agent/held-writes.ts `heldNow`), before the
 * step's `phase` and end, with their seqs, times and the session's published events as before.
 */
import { Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import type { App } from '../../src/app';
import { preparedOn } from '../../src/store/statement-cache';
import { reply } from '../helpers/fake-provider';
import { compatServer, LONE_REQUEST_LOG, LONE_RUN_EVENTS, sseData } from './compat-helpers';

const restore: (() => void)[] = [];
afterEach(() => {
  for (const undo of restore.splice(0)) undo();
});

const body = (content: string, stream = true) => ({
  model: 'fake/m1',
  stream,
  messages: [{ role: 'user', content }],
});

const EVENTS = LONE_RUN_EVENTS;

/** Marks, in order: the model request, the head and role chunk, the prompt row, run events, COMMITs. */
function marks(app: App, port: number): { order: string[]; modelAt: number[] } {
  const order: string[] = [];
  const modelAt: number[] = [];
  const proto = Socket.prototype as unknown as Record<string, (...args: any[]) => unknown>;
  const generic = proto._writeGeneric;
  proto._writeGeneric = function (this: Socket, writev_: boolean, data: any, ...rest: unknown[]) {
    const text = writev_ ? (data as { chunk: unknown }[]).map((d) => String(d.chunk)).join('') : String(data);
    if (this.localPort === port && text.includes('"role":"assistant"')) order.push('head and role');
    // Not the test's own request to svc (its socket's remote port is svc's).
    else if (this.remotePort !== port && text.includes('POST /') && text.includes('/chat/completions')) {
      order.push('model request');
      modelAt.push(Date.now());
    }
    return generic.call(this, writev_, data, ...rest);
  };
  const commit = preparedOn(app.db, 'COMMIT');
  const run = commit.run;
  commit.run = function (this: typeof commit, ...args: unknown[]) {
    order.push('COMMIT');
    return (run as (...a: unknown[]) => unknown).apply(this, args);
  } as typeof run;
  const statement = Object.getPrototypeOf(app.db.prepare('SELECT 1')) as {
    run: (...a: unknown[]) => unknown;
  };
  const stmtRun = statement.run;
  statement.run = function (this: { source: string }, ...args: unknown[]) {
    if (this.source.includes('INSERT INTO prompt_stack_builds')) order.push('prompt row');
    return stmtRun.apply(this, args);
  };
  const off = app.runs.onAppend((event) => order.push(event.type));
  restore.push(() => {
    proto._writeGeneric = generic;
    commit.run = run;
    statement.run = stmtRun;
    off();
  });
  return { order, modelAt };
}

describe('a compat run’s prompt row and first events held past its model request (SQLite)', () => {
  it('COMPAT-PERF-400: a warm streamed request writes its prompt row and prompt.assembled after its model request and head, before the start batch’s COMMIT', async () => {
    const { app, post, url } = await compatServer([reply().text('one'), reply().text('two')]);
    expect((await sseData(await post('/v1/chat/completions', body('warm')))).at(-1)).toBe('[DONE]');
    await new Promise((resolve) => setImmediate(resolve));
    const { order, modelAt } = marks(app, Number(new URL(url).port));
    const data = await sseData(await post('/v1/chat/completions', body('order')));
    expect(data.at(-1)).toBe('[DONE]');
    const runs = order.filter((mark, i) => mark !== order[i - 1]);
    const at = (mark: string) => runs.indexOf(mark);
    // On bc6cb94: prompt row, prompt.assembled, model request, head and role, COMMIT.
    expect(runs.slice(at('model request'), at('COMMIT') + 1)).toEqual([
      'model request',
      'head and role',
      'prompt row',
      'prompt.assembled',
      'COMMIT',
    ]);
    // The step's `phase` (at its first part), then its end, after them.
    expect(runs.lastIndexOf('phase')).toBeGreaterThan(at('COMMIT'));
    expect(at('step.finished')).toBeGreaterThan(runs.lastIndexOf('phase'));
    const requestId = (JSON.parse(data[0] as string) as { id: string }).id;
    await new Promise((resolve) => setImmediate(resolve));
    expect(app.db.inTransaction).toBe(false);
    const row = await app.compatRequests.get(requestId);
    expect(row).toMatchObject({ status: 'completed', http_status: 200 });
    // Same events, seqs; held at the times they were made, before the model request.
    const events = await app.runs.events(row?.run_id ?? '');
    expect(events.map((e) => [e.seq, e.type])).toEqual(EVENTS.map((type, i) => [i + 1, type]));
    const assembled = events.find((e) => e.type === 'prompt.assembled');
    expect(assembled?.created_at).toBeLessThanOrEqual(modelAt[0] ?? 0);
    // The prompt stack readout finds the run's build.
    const [build] = await app.observe.promptStack.recent({ limit: 1 });
    expect(build?.run_id).toBe(row?.run_id);
  });

  it('COMPAT-PERF-401: a non-streamed request writes them after its model request, in its start’s commit, none more', async () => {
    const { app, post, url } = await compatServer([reply().text('one'), reply().text('two')]);
    await (await post('/v1/chat/completions', body('warm', false))).json();
    await new Promise((resolve) => setImmediate(resolve));
    const { order } = marks(app, Number(new URL(url).port));
    const answer = (await (await post('/v1/chat/completions', body('order', false))).json()) as {
      choices: { message: { content: string } }[];
    };
    expect(answer.choices[0]?.message.content).toBe('two');
    await new Promise((resolve) => setImmediate(resolve));
    const runs = order.filter((mark, i) => mark !== order[i - 1]);
    const at = (mark: string) => runs.indexOf(mark);
    // On bc6cb94 the prompt row and prompt.assembled come before the model request.
    expect(runs.slice(at('model request'), at('model request') + 4)).toEqual([
      'model request',
      'prompt row',
      'prompt.assembled',
      'COMMIT',
    ]);
    expect(runs.filter((mark) => mark === 'COMMIT')).toHaveLength(2);
    const [run] = await app.runs.list({ limit: 1 });
    expect((await app.runs.events(run?.id ?? '')).map((e) => e.type)).toEqual(EVENTS);
  });

  it('COMPAT-PERF-402: a session’s published events and a failed model call’s run keep their order; the held writes are stored', async () => {
    const { app, post } = await compatServer([
      reply().text('one'),
      reply().text('two'),
      reply().httpError(400),
    ]);
    await sseData(await post('/v1/chat/completions', body('warm')));
    const published: string[] = [];
    const off = app.bus.subscribe('*', (event) => published.push(event.type));
    restore.push(off);
    await sseData(await post('/v1/chat/completions', body('again')));
    await new Promise((resolve) => setImmediate(resolve));
    // As on bc6cb94.
    expect(published).toEqual(LONE_REQUEST_LOG);
    expect((await sseData(await post('/v1/chat/completions', body('fails')))).at(-1)).toBe('[DONE]');
    await new Promise((resolve) => setImmediate(resolve));
    const [run] = await app.runs.list({ limit: 1 });
    const types = (await app.runs.events(run?.id ?? '')).map((e) => e.type);
    expect(run?.status).toBe('failed');
    expect(types).toEqual([...EVENTS.slice(0, 6), 'error', 'run.finished', 'openai_compat.response']);
    expect((await app.observe.promptStack.recent({ limit: 1 }))[0]?.run_id).toBe(run?.id);
  });
});
