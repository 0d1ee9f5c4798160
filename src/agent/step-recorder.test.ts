/**
 * The step recorder under concurrent calls (the stores' appends are async): the tool's start and
 * the stream's part record one call at the same time, and parallel tools' results arrive at the
 * same time. Pins: one assistant message holding the call once; one tool message holding every
 * result, in call order.
 */
import { describe, expect, it, vi } from 'vitest';
import { makeTestApp } from '../../test/helpers/make-test-app';
import type { AgentHost } from './deps';
import { StepRecorder } from './step-recorder';

async function recorder() {
  const app = await makeTestApp();
  const session = await app.sessions.create({ title: 'steps' });
  const host: AgentHost = app;
  const step = new StepRecorder(host, {
    sessionId: session.id,
    runId: 'run_steps',
    model: 'm1',
    provider: 'fake',
  });
  return { app, session, step };
}

describe('StepRecorder', () => {
  it('records a call reported twice at once in one assistant message, once', async () => {
    const { app, session, step } = await recorder();
    const call = { tool_call_id: 'call_1', tool: 'echo', input: { text: 'one' } };
    await Promise.all([step.toolCall(call), step.toolCall(call)]);
    await step.finish(null, 0);
    const messages = await app.sessions.messages(session.id);
    expect(messages.map((m) => [m.role, m.parts])).toEqual([
      ['assistant', [{ type: 'tool-call', tool_call_id: 'call_1', tool: 'echo', input: { text: 'one' } }]],
    ]);
  });

  it('writes the results of parallel calls into one tool message, in call order', async () => {
    const { app, session, step } = await recorder();
    const first = { tool_call_id: 'call_1', tool: 'echo', input: { text: 'one' } };
    const second = { tool_call_id: 'call_2', tool: 'echo', input: { text: 'two' } };
    await step.toolCall(first);
    await step.toolCall(second);
    await Promise.all([
      step.toolResult('call_2', 'echo', 'echo: two', false),
      step.toolResult('call_1', 'echo', 'echo: one', false),
    ]);
    await step.finish(null, 0);
    const messages = await app.sessions.messages(session.id);
    expect(messages.map((m) => m.role)).toEqual(['assistant', 'tool']);
    expect(messages[1]!.parts).toEqual([
      { type: 'tool-result', tool_call_id: 'call_1', tool: 'echo', output: 'echo: one', is_error: false },
      { type: 'tool-result', tool_call_id: 'call_2', tool: 'echo', output: 'echo: two', is_error: false },
    ]);
  });

  it('STORE-3 the step’s end writes a message’s parts only when they changed since they were stored', async () => {
    const { app, session, step } = await recorder();
    const updates = vi.spyOn(app.sessions, 'updateMessage');
    const call = { tool_call_id: 'call_1', tool: 'echo', input: { text: 'one' } };
    await step.toolCall(call);
    await step.toolResult('call_1', 'echo', 'echo: one', false);
    await step.finish({ input_tokens: 5, output_tokens: 1 }, 0.5);
    // Both messages were written whole before the end: the end marks them finished, no parts.
    expect(updates.mock.calls.map(([, patch]) => 'parts' in patch)).toEqual([false, false]);
    const [assistant, tool] = await app.sessions.messages(session.id);
    expect(assistant).toMatchObject({
      parts: [{ type: 'tool-call', tool_call_id: 'call_1', tool: 'echo', input: { text: 'one' } }],
      usage: { input_tokens: 5, output_tokens: 1 },
      cost: 0.5,
    });
    expect(assistant!.finished_at).not.toBeNull();
    expect(tool!.parts).toEqual([
      { type: 'tool-result', tool_call_id: 'call_1', tool: 'echo', output: 'echo: one', is_error: false },
    ]);
    expect(tool!.finished_at).not.toBeNull();

    // Text streamed after the last write, and results that arrived out of call order: written.
    const next = new StepRecorder(app, {
      sessionId: session.id,
      runId: 'run_steps',
      model: 'm1',
      provider: 'fake',
    });
    updates.mockClear();
    await next.textDelta('t1', 'hel');
    await next.flush();
    await next.textDelta('t1', 'lo');
    await next.toolCall({ tool_call_id: 'call_2', tool: 'echo', input: {} });
    await next.toolCall({ tool_call_id: 'call_3', tool: 'echo', input: {} });
    await next.toolResult('call_3', 'echo', 'three', false);
    await next.toolResult('call_2', 'echo', 'two', false);
    updates.mockClear();
    await next.finish(null, 0);
    expect(updates.mock.calls.map(([, patch]) => 'parts' in patch)).toEqual([false, true]);
    const stored = (await app.sessions.messages(session.id)).slice(2);
    expect(stored.map((m) => m.parts)).toEqual(next.messages().map((m) => m.parts));
    expect(stored[0]!.parts[0]).toEqual({ type: 'text', text: 'hello' });
    expect(stored[1]!.parts.map((p) => (p.type === 'tool-result' ? p.output : ''))).toEqual(['two', 'three']);

    // A delta after the last write reaches the store at the end.
    const third = new StepRecorder(app, {
      sessionId: session.id,
      runId: 'run_steps',
      model: 'm1',
      provider: 'fake',
    });
    await third.textDelta('t2', 'a');
    await third.flush();
    await third.textDelta('t2', 'b');
    updates.mockClear();
    await third.finish(null, 0);
    expect(updates.mock.calls.map(([, patch]) => 'parts' in patch)).toEqual([true]);
    expect((await app.sessions.messages(session.id)).at(-1)!.parts).toEqual([{ type: 'text', text: 'ab' }]);
  });
});

describe('StepRecorder deltas (p-bus: a delta is recorded at once once the message exists)', () => {
  it('ENGINE-BUS-4 a delta made while an earlier one still waits for the message is recorded after it', async () => {
    const { app, session, step } = await recorder();
    const seen: string[] = [];
    let later: Promise<void> | undefined;
    app.bus.subscribe(session.id, (event) => {
      seen.push(event.type === 'message.delta' ? `delta:${event.payload.delta}` : event.type);
      // The message exists now, and the first delta has not resumed yet.
      if (event.type === 'message.created') later = step.textDelta('t1', 'B');
    });
    await step.textDelta('t1', 'A');
    await later;
    await step.textDelta('t1', 'C');
    await step.finish(null, 0);
    expect(seen).toEqual(['message.created', 'delta:A', 'delta:B', 'delta:C', 'message.completed']);
    const [message] = await app.sessions.messages(session.id);
    expect(message!.parts).toEqual([{ type: 'text', text: 'ABC' }]);
  });

  it('ENGINE-CPU-172: a delta once the message exists is recorded and published before textDelta returns, with no promise', async () => {
    const { app, session, step } = await recorder();
    const seen: string[] = [];
    app.bus.subscribe(session.id, (event) => {
      if (event.type === 'message.delta') seen.push(String(event.payload.delta));
    });
    const first = step.textDelta('t1', 'A');
    // The first waits for the message's INSERT.
    expect(first).toBeInstanceOf(Promise);
    await first;
    const second = step.textDelta('t1', 'B');
    expect(second).toBeUndefined();
    expect(seen).toEqual(['A', 'B']);
    expect(step.messages()[0]!.parts).toEqual([{ type: 'text', text: 'AB' }]);
    // Nothing to record: nothing to wait for either.
    expect(step.textDelta('t1', '')).toBeUndefined();
    await step.finish(null, 0);
    const [message] = await app.sessions.messages(session.id);
    expect(message!.parts).toEqual([{ type: 'text', text: 'AB' }]);
  });
});
