/**
 * The step recorder under concurrent calls (the stores' appends are async): the tool's start and
 * the stream's part record one call at the same time, and parallel tools' results arrive at the
 * same time. Pins: one assistant message holding the call once; one tool message holding every
 * result, in call order.
 */
import { describe, expect, it } from 'vitest';
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
});
