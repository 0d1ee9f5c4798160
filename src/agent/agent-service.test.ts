/**
 * The session API's state machine and queue. Pins: a prompt sent during a run is queued and runs
 * after it (TOOLS-49: the same queue for queue_enqueue, get_prompt_queue_status and the API);
 * cancel at any point leaves the session consistent; a failed run leaves the queue waiting for
 * the next send; another App (process) on the same database sees the session busy, is refused,
 * and cancels through the ledger; subscribe replays without gaps.
 */
import { describe, expect, it } from 'vitest';
import { agentApp, echoTool, gateTool } from '../../test/helpers/agent-harness';
import { reply } from '../../test/helpers/fake-provider';
import { makeTestApp } from '../../test/helpers/make-test-app';
import { invokeTool } from '../tools/core/call-tool';
import { allTools } from '../tools/index';

describe('agent service', () => {
  it('TOOLS-49: queues a prompt sent during a run and runs it after; every queue view agrees', async () => {
    const gate = gateTool();
    const { app, provider, events } = await agentApp(
      [
        reply().toolCall('gate', {}),
        reply().text('first done'),
        reply().text('second done'),
        reply().text('third'),
      ],
      { extraTools: [gate.tool] },
    );
    const first = await app.agent.send({ prompt: 'first' });
    expect(first).toMatchObject({ status: 'running', position: 0 });
    await gate.reached;
    const second = await app.agent.send({ sessionId: first.session_id, prompt: 'second' });
    expect(second).toMatchObject({ status: 'queued', position: 1 });
    const third = (await invokeTool(
      app,
      'queue_enqueue',
      { session_id: first.session_id, prompt: 'third one' },
      {
        surface: 'mcp',
      },
    )) as { status: string; position: number };
    expect(third).toMatchObject({ status: 'queued', position: 2 });
    const status = (await invokeTool(
      app,
      'get_prompt_queue_status',
      { session_id: first.session_id },
      {
        surface: 'http',
      },
    )) as { sessions: unknown[]; total_queued: number };
    expect(status.total_queued).toBe(2);
    expect(status.sessions).toEqual([await app.agent.queue(first.session_id)]);
    expect(await app.agent.queue(first.session_id)).toMatchObject({
      state: 'running',
      active_run_id: first.run_id,
      length: 2,
      items: [
        { run_id: second.run_id, preview: 'second', origin: 'api' },
        { preview: 'third one', origin: 'mcp' },
      ],
    });
    gate.release();
    await app.agent.wait(first.run_id);
    const secondResult = await app.agent.wait(second.run_id);
    expect(secondResult).toMatchObject({ status: 'completed', text: 'second done' });
    // The third runs after the second completes (the queue drains after each completed run).
    await app.agent.waitIdle(first.session_id);
    expect(provider.remaining()).toBe(0);
    expect((await app.runs.require((third as unknown as { run_id: string }).run_id)).status).toBe(
      'completed',
    );
    const lengths = events
      .filter((e) => e.type === 'queue.changed')
      .map((e) => (e.payload as { length: number }).length);
    expect(lengths).toEqual([1, 0, 1, 2, 1, 0]);
    // Prompts ran in order, never interleaved.
    expect(
      (await app.sessions.messages(first.session_id)).filter((m) => m.role === 'user').map((m) => m.parts[0]),
    ).toEqual([
      { type: 'text', text: 'first' },
      { type: 'text', text: 'second' },
      { type: 'text', text: 'third one' },
    ]);
  });

  it('enqueue on an idle session starts at once, or waits with start: false until the next send', async () => {
    const { app } = await agentApp([reply().text('now'), reply().text('held'), reply().text('after')]);
    const session = await app.agent.createSession();
    const now = await app.agent.enqueue({ sessionId: session.id, prompt: 'now' });
    expect(now).toMatchObject({ status: 'running', position: 0 });
    await app.agent.wait(now.run_id);
    const held = await app.agent.enqueue({ sessionId: session.id, prompt: 'held', start: false });
    expect(held).toMatchObject({ status: 'queued', position: 1 });
    expect(await app.agent.queue(session.id)).toMatchObject({ state: 'idle', length: 1 });
    const after = await app.agent.send({ sessionId: session.id, prompt: 'after' });
    expect(after).toMatchObject({ status: 'queued', position: 1 });
    expect((await app.agent.wait(held.run_id)).text).toBe('held');
    expect((await app.agent.wait(after.run_id)).text).toBe('after');
  });

  it('cancels a run in a tool call: state running → cancelling → idle, dangling call closed', async () => {
    const gate = gateTool();
    const { app, events } = await agentApp([reply().text('thinking…').toolCall('gate', {})], {
      extraTools: [gate.tool],
    });
    const sent = await app.agent.send({ prompt: 'wait' });
    await gate.reached;
    const cancel = await app.agent.cancel(sent.session_id);
    expect(cancel).toEqual({ cancelled_run_id: sent.run_id, cleared: [] });
    const result = await app.agent.wait(sent.run_id);
    expect(result).toMatchObject({
      status: 'cancelled',
      reason: 'cancelled by the operator',
      text: 'thinking…',
    });
    const states = events
      .filter((e) => e.type === 'state.changed')
      .map((e) => (e.payload as { state: string }).state);
    expect(states).toEqual(['running', 'cancelling', 'idle']);
    const messages = await app.sessions.messages(sent.session_id);
    expect(messages.map((m) => m.role)).toEqual(['user', 'assistant', 'tool']);
    expect(messages.every((m) => m.finished_at !== null)).toBe(true);
    expect(messages[2].parts).toEqual([
      expect.objectContaining({
        type: 'tool-result',
        is_error: true,
        output: expect.stringMatching(/^internal|^error/),
      }),
    ]);
    expect(await app.agent.state(sent.session_id)).toMatchObject({ state: 'idle', run_id: null });
  });

  it('cancels a run waiting on the model, and clears the queue on request', async () => {
    const { app } = await agentApp([reply().hang()]);
    const first = await app.agent.send({ prompt: 'slow' });
    const queued = await app.agent.send({ sessionId: first.session_id, prompt: 'later' });
    await new Promise((r) => setTimeout(r, 50));
    const outcome = await app.agent.cancel(first.session_id, { clearQueue: true });
    expect(outcome).toEqual({ cancelled_run_id: first.run_id, cleared: [queued.run_id] });
    expect(await app.agent.wait(first.run_id)).toMatchObject({ status: 'cancelled' });
    expect(await app.agent.wait(queued.run_id)).toMatchObject({
      status: 'cancelled',
      reason: 'removed from the queue',
    });
    expect((await app.agent.queue(first.session_id)).length).toBe(0);
    expect((await app.sessions.messages(first.session_id)).map((m) => m.role)).toEqual(['user']);
  });

  it('after a failed run the queue waits; the next send runs the queued prompt first', async () => {
    const gate = gateTool();
    const { app, provider } = await agentApp(
      [reply().toolCall('gate', {}), reply().httpError(400), reply().text('B'), reply().text('C')],
      { extraTools: [gate.tool] },
    );
    const a = await app.agent.send({ prompt: 'A' });
    await gate.reached;
    const b = await app.agent.send({ sessionId: a.session_id, prompt: 'B' });
    gate.release();
    expect((await app.agent.wait(a.run_id)).status).toBe('failed');
    expect(await app.agent.queue(a.session_id)).toMatchObject({ state: 'idle', length: 1 });
    const c = await app.agent.send({ sessionId: a.session_id, prompt: 'C' });
    expect(c).toMatchObject({ status: 'queued', position: 1 });
    expect((await app.agent.wait(b.run_id)).text).toBe('B');
    expect((await app.agent.wait(c.run_id)).text).toBe('C');
    expect(provider.requests.map((r) => r.body.messages.at(-1).content)).toEqual([
      'A',
      'passed the gate',
      'B',
      'C',
    ]);
  });

  it('another App on the same database sees the session busy, is refused, and cancels through the ledger', async () => {
    const { app } = await agentApp([reply().hang()]);
    const sent = await app.agent.send({ prompt: 'long job' });
    await new Promise((r) => setTimeout(r, 50));
    const other = await makeTestApp({
      workspace: app.workspace,
      dataDir: app.dataDir,
      env: app.env as Record<string, string>,
      tools: allTools,
    });
    expect(await other.agent.state(sent.session_id)).toMatchObject({
      state: 'running',
      run_id: null,
      busy_elsewhere: { run_id: sent.run_id, pid: process.pid },
    });
    await expect(
      other.agent.send({ sessionId: sent.session_id, prompt: 'me too', ifBusy: 'refuse' }),
    ).rejects.toThrow(/is busy: run run_0001 is running in another svc process/);
    const update = await invokeTool(
      other,
      'update_agent_run',
      { run_id: sent.run_id, action: 'cancel' },
      {
        surface: 'cli',
      },
    );
    expect(update).toMatchObject({ outcome: 'cancel_requested', previous_status: 'running' });
    const result = await app.agent.wait(sent.run_id);
    expect(result).toMatchObject({
      status: 'cancelled',
      reason: 'cancelled (requested through the run ledger)',
    });
    // The other App waits on the same run by polling the ledger.
    expect(await other.agent.wait(sent.run_id)).toMatchObject({ status: 'cancelled' });
  });

  it('subscribe with afterId replays retained events, then streams live ones without gaps', async () => {
    const { app } = await agentApp([reply().text('one'), reply().text('two')], { extraTools: [echoTool] });
    const first = await app.agent.run({ prompt: 'one' });
    const all = await app.bus.retained(first.session_id);
    const middle = all[Math.floor(all.length / 2)].id;
    const seen: number[] = [];
    const off = await app.agent.subscribe(first.session_id, (e) => seen.push(e.id), { afterId: middle });
    await app.agent.run({ sessionId: first.session_id, prompt: 'two' });
    off();
    const expected = (await app.bus.retained(first.session_id)).filter((e) => e.id > middle).map((e) => e.id);
    expect(seen).toEqual(expected);
  });

  it('close() stops active runs as interrupted', async () => {
    const { app } = await agentApp([reply().hang()]);
    const sent = await app.agent.send({ prompt: 'x' });
    await new Promise((r) => setTimeout(r, 50));
    await app.agent.close();
    expect(await app.runs.require(sent.run_id)).toMatchObject({
      status: 'interrupted',
      reason: 'svc shut down while the run was active',
    });
  });
});
