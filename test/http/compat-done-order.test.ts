/**
 * A completed streamed compat request's `[DONE]` leaves in its run's `run.finished` delivery
 * (src/surfaces/http/compat/stream-answer.ts `answerDone`): from the event's status, reason and
 * usage, with no result read, before the rest of the run's finish (its `run finished` log record,
 * the session's idle state). The row `[DONE]` promises is ended by then (the run's finish wrote it).
 */
import { Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { reply } from '../helpers/fake-provider';
import { compatServer, sseData } from './compat-helpers';

const restore: (() => void)[] = [];
afterEach(() => {
  for (const undo of restore.splice(0)) undo();
});

/** Pushes `[DONE] written` to `order` when a write of svc's socket (its local `port`) carries `[DONE]`. */
function doneWrites(order: string[], port: number): void {
  const proto = Socket.prototype as unknown as Record<string, (...args: any[]) => unknown>;
  const generic = proto._writeGeneric;
  proto._writeGeneric = function (this: Socket, writev_: boolean, data: any, ...rest: unknown[]) {
    const text = writev_ ? (data as { chunk: unknown }[]).map((d) => String(d.chunk)).join('') : String(data);
    if (text.includes('data: [DONE]') && this.localPort === port) order.push('[DONE] written');
    return generic.call(this, writev_, data, ...rest);
  };
  restore.push(() => {
    proto._writeGeneric = generic;
  });
}

const body = (content: string, usage = false) => ({
  model: 'fake/m1',
  stream: true,
  ...(usage ? { stream_options: { include_usage: true } } : {}),
  messages: [{ role: 'user', content }],
});

describe('compat [DONE] in the run.finished delivery (SQLite)', () => {
  it('COMPAT-PERF-340: [DONE] is written before the run finished log record and the idle state, with no result read; the row ended', async () => {
    const { app, post, url } = await compatServer([reply().text('one'), reply().text('two')]);
    expect((await sseData(await post('/v1/chat/completions', body('warm')))).at(-1)).toBe('[DONE]');
    await new Promise((resolve) => setImmediate(resolve));

    const order: string[] = [];
    doneWrites(order, Number(new URL(url).port));
    const info = app.log.info;
    app.log.info = function (this: typeof app.log, message: string, fields?: Record<string, unknown>) {
      if (message === 'run finished') order.push('log run finished');
      return info.call(this, message, fields);
    } as typeof info;
    restore.push(() => {
      app.log.info = info;
    });
    const unsubscribe = app.bus.subscribe('*', (event) => {
      const payload = event.payload as { state?: string };
      if (event.type === 'state.changed' && payload.state === 'idle') order.push('idle');
    });
    restore.push(unsubscribe);
    const result = app.agent.result;
    let reads = 0;
    app.agent.result = ((...args: Parameters<typeof result>) => {
      reads++;
      return (result as (...a: unknown[]) => unknown).apply(app.agent, args);
    }) as typeof result;
    restore.push(() => {
      app.agent.result = result;
    });

    const data = await sseData(await post('/v1/chat/completions', body('count')));
    expect(data.at(-1)).toBe('[DONE]');
    const final = JSON.parse(data.at(-2) as string) as { choices: { finish_reason: string | null }[] };
    expect(final.choices[0]?.finish_reason).toBe('stop');
    const requestId = (JSON.parse(data[0] as string) as { id: string }).id;
    await new Promise((resolve) => setImmediate(resolve));
    // 1 on f92fc10: the answer's end read the run's result, then wrote `[DONE]` after the finish's rest.
    expect(reads).toBe(0);
    expect(order).toEqual(['[DONE] written', 'log run finished', 'idle']);
    expect(await app.compatRequests.get(requestId)).toMatchObject({
      status: 'completed',
      finish_reason: 'stop',
      http_status: 200,
    });
  });

  it('COMPAT-PERF-341: the usage chunk from the run.finished event is the run result’s usage', async () => {
    const { app, post } = await compatServer([reply().text('one'), reply().text('two')]);
    expect((await sseData(await post('/v1/chat/completions', body('warm', true)))).at(-1)).toBe('[DONE]');
    const data = await sseData(await post('/v1/chat/completions', body('usage', true)));
    expect(data.at(-1)).toBe('[DONE]');
    const usageChunk = JSON.parse(data.at(-2) as string) as {
      choices: unknown[];
      usage: { prompt_tokens: number; completion_tokens: number; total_tokens: number };
    };
    expect(usageChunk.choices).toEqual([]);
    const requestId = (JSON.parse(data[0] as string) as { id: string }).id;
    const row = await app.compatRequests.get(requestId);
    const run = await app.agent.result(row?.run_id ?? '', { text: false });
    expect(run.status).toBe('completed');
    expect(usageChunk.usage).toEqual({
      prompt_tokens: run.usage.input_tokens,
      completion_tokens: run.usage.output_tokens,
      total_tokens: run.usage.input_tokens + run.usage.output_tokens,
    });
    expect(usageChunk.usage.total_tokens).toBeGreaterThan(0);
    expect(row).toMatchObject({
      prompt_tokens: run.usage.input_tokens,
      completion_tokens: run.usage.output_tokens,
    });
  });

  it('COMPAT-PERF-342: a warm request writes its model request before its head and role chunk; the role chunk is still the first data', async () => {
    const { post, url } = await compatServer([reply().text('one'), reply().text('two')]);
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
      if (this.localPort === port)
        order.push(text.includes('"role":"assistant"') ? 'head and role' : 'client');
      else if (text.includes('POST /') && text.includes('/chat/completions')) order.push('model request');
      return generic.call(this, writev_, data, ...rest);
    };
    restore.push(() => {
      proto._writeGeneric = generic;
    });
    const data = await sseData(await post('/v1/chat/completions', body('order')));
    // The model request's writes (its head, then its body), all before svc's head and role chunk:
    // ['model request', 'head and role', 'model request', …] on f92fc10, the body after svc's head.
    expect(order.indexOf('model request')).toBeGreaterThanOrEqual(0);
    expect(order.indexOf('head and role')).toBeGreaterThan(order.lastIndexOf('model request'));
    expect(order.indexOf('client')).toBeGreaterThan(order.indexOf('head and role'));
    const first = JSON.parse(data[0] as string) as { choices: { delta: Record<string, unknown> }[] };
    expect(first.choices[0]?.delta).toEqual({ role: 'assistant', content: '', refusal: null });
    expect(data.at(-1)).toBe('[DONE]');
  });
});
