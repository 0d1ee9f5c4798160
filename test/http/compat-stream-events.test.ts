/**
 * How the compat stream (src/surfaces/http/compat/stream-answer.ts) takes its session's events.
 * Pins: every event of the session but the run's end is handled synchronously, with no promise
 * made for it (a dozen or more events a request pass through); a text delta's chunk has the same
 * bytes as the whole chunk object stringified; the run's end still answers asynchronously.
 */
import type { Context } from 'hono';
import { describe, expect, it } from 'vitest';
import type { App } from '../../src/app';
import type { SessionEvent } from '../../src/events/bus';
import type { Prepared } from '../../src/surfaces/http/compat/prepared';
import { streamAnswer } from '../../src/surfaces/http/compat/stream-answer';
import { createStreamTracker } from '../../src/surfaces/http/sse';
import { promiseCounter } from '../helpers/promise-count';

/** The promises made while `fn` runs (synchronously). */
function promisesMadeBy(fn: () => void): number {
  const counter = promiseCounter();
  let made = 0;
  counter.start();
  try {
    fn();
  } finally {
    made = counter.stop();
  }
  return made;
}

function answer() {
  let listener: ((event: SessionEvent) => void) | undefined;
  const prepared = {
    request: { include_usage: false },
    requestId: 'chatcmpl-1',
    sessionId: 's_1',
    runId: 'run_1',
    model: { resolved: { selector: 'fake/m1' } },
    created: 1_700_000_000,
    release: () => {},
    unsubscribe: () => {},
    early: [],
    onEvent(next: (event: SessionEvent) => void) {
      listener = next;
    },
  } as unknown as Prepared;
  const app = {
    config: { services: { http: { sse_heartbeat_seconds: 0 } } },
    redactor: { string: (text: string) => text },
    log: { warn: () => {} },
  } as unknown as App;
  const c = { req: { raw: { signal: new AbortController().signal } }, env: {} } as unknown as Context;
  const response = streamAnswer(c, app, prepared, {}, createStreamTracker());
  const event = (type: string, payload: Record<string, unknown>) =>
    ({ id: 1, session_id: 's_1', type, payload: { run_id: 'run_1', ...payload } }) as unknown as SessionEvent;
  return { response, send: (e: SessionEvent) => listener?.(e), event };
}

describe('compat stream events', () => {
  it('ENGINE-CPU-22: the session events of a streamed answer make no promise, its text chunks have the same bytes', async () => {
    const { response, send, event } = answer();
    const events = [
      event('message.delta', { message_id: 'm1', part: 'text', delta: 'Hel"lo' }),
      event('message.delta', { message_id: 'm1', part: 'reasoning', delta: 'hmm' }),
      event('tool.started', { tool: 'view' }),
      event('message.delta', { message_id: 'm2', part: 'text', delta: 'wörld\n' }),
      event('message.delta', { message_id: 'm2', part: 'text', delta: 'x', run_id: 'run_2' }),
    ];
    expect(promisesMadeBy(() => events.forEach(send))).toBe(0);
    const reader = (response.body as ReadableStream<Uint8Array>).getReader();
    let text = '';
    while (!text.includes('wörld')) text += new TextDecoder().decode((await reader.read()).value);
    await reader.cancel();
    const chunk = (delta: Record<string, unknown>) =>
      `data: ${JSON.stringify({
        id: 'chatcmpl-1',
        object: 'chat.completion.chunk',
        created: 1_700_000_000,
        model: 'fake/m1',
        system_fingerprint: null,
        choices: [{ index: 0, delta, logprobs: null, finish_reason: null }],
      })}\n\n`;
    expect(text).toBe(
      chunk({ role: 'assistant', content: '', refusal: null }) +
        chunk({ content: 'Hel"lo' }) +
        chunk({ content: '\n\nwörld\n' }),
    );
  });
});
