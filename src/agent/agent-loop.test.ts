/**
 * The agent loop against the scripted fake provider. Pins: a tool call goes through the registry
 * and its result back to the model; deltas and lifecycle events reach the bus in order; messages
 * are stored as typed parts with usage and cost; malformed tool input and a throwing tool are
 * tool errors the model reads while the run goes on; a provider error fails the run with a
 * redacted reason; the step limit and loop detection stop a run with a clear reason.
 */
import { describe, expect, it } from 'vitest';
import { agentApp, echoTool, eventTypes, throwingTool } from '../../test/helpers/agent-harness';
import { reply } from '../../test/helpers/fake-provider';

describe('agent loop', () => {
  it('runs a tool call, sends the result back, and ends with the model text', async () => {
    const { app, provider, events } = await agentApp(
      [reply().toolCall('echo', { text: 'hi' }).usage(100, 20), reply().text('It says hi.').usage(130, 8)],
      { extraTools: [echoTool], modelInfo: { context_window: 1000, cost_per_1m_in: 2, cost_per_1m_out: 10 } },
    );
    const result = await app.agent.run({ prompt: 'What does echo say?' });
    expect(result).toMatchObject({ status: 'completed', text: 'It says hi.', steps: 2, reason: null });
    expect(result.usage).toMatchObject({ input_tokens: 230, output_tokens: 28 });
    expect(result.cost).toBeCloseTo((230 * 2 + 28 * 10) / 1e6, 10);
    expect(provider.requests).toHaveLength(2);
    const second = provider.requests[1].body.messages;
    expect(second.at(-1)).toMatchObject({
      role: 'tool',
      tool_call_id: expect.any(String),
      content: 'echo: hi',
    });
    // A 1000-token window defers the non-core tools (tool-exposure.test.ts): echo is called by
    // name from the listing, then sent in full.
    expect(
      provider.requests[1].body.tools.map((t: { function: { name: string } }) => t.function.name),
    ).toContain('echo');
    const messages = await app.sessions.messages(result.session_id);
    expect(messages.map((m) => m.role)).toEqual(['user', 'assistant', 'tool', 'assistant']);
    expect(messages[1].parts).toEqual([
      { type: 'tool-call', tool_call_id: expect.any(String), tool: 'echo', input: { text: 'hi' } },
    ]);
    expect(messages[1].usage).toMatchObject({ input_tokens: 100, output_tokens: 20 });
    expect(messages[2].parts).toEqual([
      {
        type: 'tool-result',
        tool_call_id: expect.any(String),
        tool: 'echo',
        output: 'echo: hi',
        is_error: false,
      },
    ]);
    expect(messages[3]).toMatchObject({
      parts: [{ type: 'text', text: 'It says hi.' }],
      run_id: result.run_id,
    });
    expect(messages.every((m) => m.finished_at !== null)).toBe(true);
    const session = await app.sessions.require(result.session_id);
    expect(session).toMatchObject({
      prompt_tokens: 230,
      completion_tokens: 28,
      title: 'What does echo say?',
    });

    const types = eventTypes(events, result.session_id).filter((t) => t !== 'session.updated');
    expect(types).toEqual([
      'session.created',
      'queue.changed',
      'state.changed',
      'queue.changed',
      'run.started',
      'message.created',
      'message.completed',
      'message.created',
      'tool.started',
      'tool.finished',
      'message.created',
      'message.completed',
      'message.completed',
      'context.usage',
      'message.created',
      'message.delta',
      'message.delta',
      'message.completed',
      'context.usage',
      'run.finished',
      'state.changed',
    ]);
    const usage = events.find((e) => e.type === 'context.usage')!.payload;
    expect(usage).toMatchObject({ input_tokens: 120, context_window: 1000, ratio: 0.12 });
    const ledgerTypes = (await app.runs.events(result.run_id)).map((e) => e.type);
    expect(ledgerTypes).toEqual([
      'run.queued',
      'run.started',
      'phase',
      'model.resolved',
      'prompt.assembled',
      'phase',
      'tool.started',
      'tool.finished',
      'step.finished',
      'phase',
      'step.finished',
      'run.finished',
    ]);
  });

  it('returns malformed tool input and a throwing tool to the model as tool errors, and goes on', async () => {
    const { app, provider } = await agentApp(
      [
        reply().toolCall('echo', { wrong: 1 }).toolCall('explode', {}).toolCall('no_such_tool', {}),
        reply().text('recovered'),
      ],
      { extraTools: [echoTool, throwingTool] },
    );
    const result = await app.agent.run({ prompt: 'try things' });
    expect(result).toMatchObject({ status: 'completed', text: 'recovered' });
    const toolMessages = provider.requests[1].body.messages.filter(
      (m: { role: string }) => m.role === 'tool',
    );
    expect(toolMessages.map((m: { content: string }) => m.content)).toEqual([
      expect.stringMatching(/^invalid_input: echo: (unknown field wrong|text: .*)/),
      'internal: internal error: kaboom',
      expect.stringContaining("unavailable tool 'no_such_tool'"),
    ]);
    const stored = (await app.sessions.messages(result.session_id)).find((m) => m.role === 'tool')!;
    expect(stored.parts.every((p) => p.type === 'tool-result' && p.is_error)).toBe(true);
  });

  it('fails the run with a redacted reason on a provider error', async () => {
    const { app } = await agentApp(
      [reply().httpError(401, { error: { message: 'bad key sk-abcdefghijklmnopqrstuvwx', type: 'auth' } })],
      {},
    );
    const result = await app.agent.run({ prompt: 'hello' });
    expect(result.status).toBe('failed');
    expect(result.reason).toBe('provider_error');
    expect(result.error).toContain('HTTP 401');
    expect(result.error).not.toContain('sk-abcdefghijklmnopqrstuvwx');
    expect((await app.runs.require(result.run_id)).status).toBe('failed');
    // The prompt is kept even though no answer came.
    expect((await app.sessions.messages(result.session_id)).map((m) => m.role)).toEqual(['user']);
  });

  it('names the provider in any provider error, not only credential ones', async () => {
    const { app } = await agentApp([reply().httpError(400, { error: { message: 'bad request body' } })], {});
    const result = await app.agent.run({ prompt: 'hello' });
    expect(result).toMatchObject({ status: 'failed', reason: 'provider_error' });
    expect(result.error).toMatch(/^provider error \(HTTP 400\): fake: .*bad request body/);
  });

  it('stops at the step limit, telling the model on the last step to answer without tools', async () => {
    const { app, provider } = await agentApp(
      [reply().toolCall('echo', { text: 'a' }), reply().toolCall('echo', { text: 'b' })],
      { extraTools: [echoTool] },
    );
    const result = await app.agent.run({ prompt: 'loop', maxSteps: 2 });
    expect(result.status).toBe('failed');
    expect(result.reason).toMatch(/^max_steps: the step limit \(2\)/);
    expect(provider.requests[1].body.tool_choice).toBe('none');
    expect(JSON.stringify(provider.requests[1].body.messages[0])).toContain('last step you are allowed');
  });

  it('completes on the last step when the model answers as told', async () => {
    const { app } = await agentApp([reply().toolCall('echo', { text: 'a' }), reply().text('summary')], {
      extraTools: [echoTool],
    });
    const result = await app.agent.run({ prompt: 'x', maxSteps: 2 });
    expect(result).toMatchObject({ status: 'completed', text: 'summary' });
  });

  it('detects a loop (same call, same result) and stops the run with loop.detected', async () => {
    const same = () => reply().toolCall('echo', { text: 'again' });
    const { app, events } = await agentApp([same(), same(), same()], {
      extraTools: [echoTool],
      extraConfig: { options: { loop_detection: { max_repeats: 3 } } },
    });
    const result = await app.agent.run({ prompt: 'x' });
    expect(result.status).toBe('failed');
    expect(result.reason).toMatch(/^loop detected: echo was called 3 times in a row/);
    expect(events.find((e) => e.type === 'loop.detected')?.payload).toMatchObject({
      tool: 'echo',
      repeats: 3,
    });
    // The session stays consistent: every tool call has its result.
    const parts = (await app.sessions.messages(result.session_id)).flatMap((m) => m.parts);
    const calls = parts.filter((p) => p.type === 'tool-call').length;
    expect(parts.filter((p) => p.type === 'tool-result').length).toBe(calls);
  });

  it('streams reasoning and text deltas and stores both parts', async () => {
    const { app, events } = await agentApp([reply().reasoning('thinking hard').text('answer')]);
    const result = await app.agent.run({ prompt: 'x' });
    const deltas = events.filter((e) => e.type === 'message.delta').map((e) => e.payload);
    expect(
      deltas
        .filter((d) => d.part === 'reasoning')
        .map((d) => d.delta)
        .join(''),
    ).toBe('thinking hard');
    expect(
      deltas
        .filter((d) => d.part === 'text')
        .map((d) => d.delta)
        .join(''),
    ).toBe('answer');
    const assistant = (await app.sessions.messages(result.session_id)).find((m) => m.role === 'assistant')!;
    expect(assistant.parts.map((p) => p.type)).toEqual(['reasoning', 'text']);
  });
});
