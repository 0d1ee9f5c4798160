/**
 * The caller rules of the session tools (agent-caller.ts): a model's call (surface `agent`, in a
 * run of its session) acts on its own session and its sub-agent sessions only, never loosens a
 * restriction, never switches the current session; an operator's call (MCP here) keeps every
 * power. The end-to-end probe scenario is test/http/agent-session-scope.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { makeTestApp } from '../../test/helpers/make-test-app';
import type { App } from '../app';
import { invokeTool } from './core/call-tool';

/** A call as the agent loop makes it: the run's session and run, asks approved. */
const asAgent = (app: App, sessionId: string, name: string, input: Record<string, unknown> = {}) =>
  invokeTool(app, name, input, {
    surface: 'agent',
    sessionId,
    runId: 'run_x',
    ask: async () => {},
  }) as Promise<any>;
const asOperator = (app: App, name: string, input: Record<string, unknown> = {}) =>
  invokeTool(app, name, input, { surface: 'mcp' }) as Promise<any>;

async function setup() {
  const app = await makeTestApp();
  const own = await app.agent.createSession({ title: 'own', mode: 'plan' });
  const child = await app.agent.createSession({ title: 'child', parent_id: own.id, mode: 'plan' });
  const other = await app.agent.createSession({ title: 'other', mode: 'plan' });
  return { app, own: own.id, child: child.id, other: other.id };
}

describe('what the agent may do to sessions', () => {
  it('never leaves plan mode, of its own session or a child; narrows and retitles its own', async () => {
    const { app, own, child } = await setup();
    await expect(asAgent(app, own, 'update_session', { mode: 'build' })).rejects.toMatchObject({
      code: 'forbidden',
      message: expect.stringContaining('plan mode is left by the user'),
    });
    await expect(
      asAgent(app, own, 'update_session', { session_id: child, mode: 'build' }),
    ).rejects.toMatchObject({ code: 'forbidden' });
    expect((await app.sessions.require(own)).mode).toBe('plan');
    expect((await app.sessions.require(child)).mode).toBe('plan');
    expect((await asAgent(app, own, 'update_session', { title: 'renamed' })).session.title).toBe('renamed');
    await asOperator(app, 'update_session', { session_id: own, mode: 'build' });
    await asAgent(app, own, 'update_session', { mode: 'plan' });
    expect((await app.sessions.require(own)).mode).toBe('plan');
  });

  it('never moves its session from a read-only agent kind to one that may mutate', async () => {
    const { app, own } = await setup();
    await asOperator(app, 'update_session', { session_id: own, agent: 'plan' });
    await expect(asAgent(app, own, 'update_session', { agent: 'build' })).rejects.toMatchObject({
      code: 'forbidden',
      message: expect.stringContaining('read-only agent kind plan is left by the user'),
    });
    expect((await app.sessions.require(own)).agent).toBe('plan');
  });

  it("changes no other session's settings or plan; its own and its child's it may", async () => {
    const { app, own, child, other } = await setup();
    for (const [name, input] of [
      ['update_session', { title: 'x' }],
      ['set_session_model', { model: null }],
      ['set_reasoning_effort', { effort: 'low' }],
      ['set_plan_artifact', { markdown: '1. injected' }],
      ['return_to_plan', {}],
      ['clear_plan', {}],
      ['approve_plan', {}],
    ] as const) {
      await expect(asAgent(app, own, name, { session_id: other, ...input }), name).rejects.toMatchObject({
        code: 'forbidden',
        message: expect.stringContaining(`session_id: ${other} is not the session this run works in`),
      });
    }
    const untouched = await app.sessions.require(other);
    expect([untouched.title, untouched.reasoning_effort, untouched.metadata.plan]).toEqual([
      'other',
      null,
      undefined,
    ]);
    await asAgent(app, own, 'set_reasoning_effort', { effort: 'low' });
    await asAgent(app, own, 'set_reasoning_effort', { session_id: child, effort: 'high' });
    expect((await app.sessions.require(child)).reasoning_effort).toBe('high');
    await asOperator(app, 'set_reasoning_effort', { session_id: other, effort: 'low' });
    expect((await app.sessions.require(other)).reasoning_effort).toBe('low');
  });

  it('does not end the planning phase by clearing the plan; the operator may', async () => {
    const { app, own } = await setup();
    await asAgent(app, own, 'set_plan_artifact', { markdown: '1. do it' });
    await expect(asAgent(app, own, 'clear_plan')).rejects.toMatchObject({
      code: 'forbidden',
      message: expect.stringContaining('is in the planning phase'),
    });
    expect((await app.sessions.require(own)).metadata.workflow_phase).toBe('planning');
    expect(await asOperator(app, 'clear_plan', { session_id: own })).toMatchObject({ cleared: true });
  });

  it('starts no run in another session, edits or deletes none of its messages, deletes no other session', async () => {
    const { app, own, child, other } = await setup();
    const note = await app.sessions.appendMessage({
      session_id: other,
      role: 'user',
      parts: [{ type: 'text', text: 'the operator wrote this' }],
    });
    for (const [name, input] of [
      ['message', { action: 'send', session_id: other, text: 'injected' }],
      ['queue_enqueue', { session_id: other, prompt: 'injected' }],
      ['message', { action: 'update', message_id: note.id, text: 'injected' }],
      ['message', { action: 'delete', message_id: note.id }],
      ['summarize_session', { session_id: other }],
      ['contract_rerun', { session_id: other, attach: { t: { kind: 'file_exists', path: 'x' } } }],
      ['delete_session', { session_id: other }],
    ] as const) {
      await expect(asAgent(app, own, name, input), name).rejects.toMatchObject({
        code: 'forbidden',
        message: expect.stringContaining(`session_id: ${other} is not the session this run works in`),
      });
    }
    expect(await app.sessions.messages(other)).toMatchObject([
      { id: note.id, parts: [{ type: 'text', text: 'the operator wrote this' }] },
    ]);
    expect(await app.agent.queue(other)).toHaveLength(0);
    expect((await app.sessions.require(other)).id).toBe(other);
    const queued = await asAgent(app, own, 'queue_enqueue', {
      session_id: child,
      prompt: 'next',
      start: false,
    });
    expect(queued.queue).toHaveLength(1);
    expect(await asOperator(app, 'delete_session', { session_id: other })).toMatchObject({ count: 1 });
  });

  it('creates sessions only as its own children, never less restricted than its own', async () => {
    const { app, own, other } = await setup();
    const made = (await asAgent(app, own, 'create_session', { title: 'helper' })).session;
    expect(await app.sessions.require(made.id)).toMatchObject({ parent_id: own, mode: 'plan' });
    await expect(asAgent(app, own, 'create_session', { mode: 'build' })).rejects.toMatchObject({
      code: 'forbidden',
      message: expect.stringContaining('a session the agent creates is in plan mode too'),
    });
    await expect(asAgent(app, own, 'create_session', { parent_id: other })).rejects.toMatchObject({
      code: 'forbidden',
      message: expect.stringContaining(`session_id: ${other} is not the session this run works in`),
    });
    await asOperator(app, 'update_session', { session_id: own, mode: 'build', agent: 'plan' });
    const readOnly = (await asAgent(app, own, 'create_session', {})).session;
    expect(await app.sessions.require(readOnly.id)).toMatchObject({ parent_id: own, agent: 'plan' });
    await expect(asAgent(app, own, 'create_session', { agent: 'build' })).rejects.toMatchObject({
      code: 'forbidden',
    });
    expect(
      (await asAgent(app, own, 'queue_enqueue', { session_id: made.id, prompt: 'go', start: false })).queue,
    ).toHaveLength(1);
    const free = (await asOperator(app, 'create_session', { mode: 'build' })).session;
    expect(await app.sessions.require(free.id)).toMatchObject({ parent_id: null, mode: 'build' });
  });

  it('starts no sub-agent, workflow or fork under another session, nor under a build-mode one from plan mode', async () => {
    const { app, own, child, other } = await setup();
    await asOperator(app, 'update_session', { session_id: other, mode: 'build' });
    const otherRun = await app.runs.create({
      session_id: other,
      family_session_id: other,
      agent: 'build',
      origin: 'api',
      prompt: 'the operator asked',
    });
    const refusedOther = expect.stringContaining(`session_id: ${other} is not the session this run works in`);
    for (const [name, input] of [
      ['agent', { session_id: other, prompt: 'write pwned.txt' }],
      ['agentic_fetch', { session_id: other, url: 'http://127.0.0.1:9/', prompt: 'x' }],
      ['execute_dag', { session_id: other, tasks: [{ id: 'a', prompt: 'write pwned.txt' }] }],
      ['fork_agent_run', { run_id: otherRun.id }],
      ['contract_waive_obligation', { session_id: other, obligation_id: 'x', reason: 'y' }],
    ] as const) {
      await expect(asAgent(app, own, name, input), name).rejects.toMatchObject({
        code: 'forbidden',
        message: refusedOther,
      });
    }
    // A child the operator moved to build mode: the plan-mode run starts nothing under it.
    await asOperator(app, 'update_session', { session_id: child, mode: 'build' });
    await expect(
      asAgent(app, own, 'agent', { session_id: child, prompt: 'write pwned.txt' }),
    ).rejects.toMatchObject({
      code: 'forbidden',
      message: expect.stringContaining('may not start sub-agents under a less restricted session'),
    });
    expect((await app.sessions.family(other)).map((s) => s.id)).toEqual([other]);
    expect((await app.sessions.family(child)).map((s) => s.id)).toEqual([child]);
  });

  it('queues no run of a mutating agent kind in a session held to a read-only kind', async () => {
    const { app, own } = await setup();
    await asOperator(app, 'update_session', { session_id: own, agent: 'plan' });
    for (const [name, input] of [
      ['message', { action: 'send', text: 'go', agent: 'build' }],
      ['queue_enqueue', { prompt: 'go', agent: 'build', start: false }],
    ] as const) {
      await expect(asAgent(app, own, name, input), name).rejects.toMatchObject({
        code: 'forbidden',
        message: expect.stringContaining('read-only agent kind plan is left by the user'),
      });
    }
    expect(await app.agent.queue(own)).toHaveLength(0);
  });

  it('gives no run it starts, prepares or schedules a tool its own agent kind withholds', async () => {
    const app = await makeTestApp({
      config: { agents: { reviewer: { tools: { deny: ['bash', 'write'] } } } },
    });
    const own = (await app.agent.createSession({ title: 'own', agent: 'reviewer' })).id;
    const other = (await app.agent.createSession({ title: 'other' })).id;
    const run = await app.runs.create({
      session_id: own,
      family_session_id: own,
      agent: 'reviewer',
      origin: 'api',
      prompt: 'review',
    });
    const call = (name: string, input: Record<string, unknown>) =>
      invokeTool(app, name, input, { surface: 'agent', sessionId: own, runId: run.id, ask: async () => {} });
    const wider = expect.stringMatching(
      /a run of agent kind build could use .*bash.*which this run \(agent kind reviewer\) cannot/,
    );
    for (const [name, input] of [
      ['update_session', { agent: 'build' }],
      ['create_session', { agent: 'build' }],
      ['message', { action: 'send', text: 'go', agent: 'build' }],
      ['queue_enqueue', { prompt: 'go', agent: 'build', start: false }],
      ['schedule', { action: 'create', name: 'later', prompt: 'go', cron: '0 3 * * *', agent: 'build' }],
    ] as const) {
      await expect(call(name, input), name).rejects.toMatchObject({ code: 'forbidden', message: wider });
    }
    expect((await app.sessions.require(own)).agent).toBe('reviewer');
    await expect(call('agent', { prompt: 'run the tests', tools: ['bash'] })).rejects.toMatchObject({
      code: 'forbidden',
      message: expect.stringContaining('a sub-agent never gets more tools than its parent'),
    });
    await expect(
      call('schedule', {
        action: 'create',
        name: 'there',
        prompt: 'go',
        cron: '0 3 * * *',
        session_id: other,
      }),
    ).rejects.toMatchObject({ code: 'forbidden', message: expect.stringContaining(`session_id: ${other}`) });
    expect(await app.scheduler.store.list()).toHaveLength(0);
    // A session it creates keeps its kind, and a prompt to it runs under that kind.
    const made = (await call('create_session', { title: 'helper' })) as { session: { id: string } };
    expect(await app.sessions.require(made.session.id)).toMatchObject({ parent_id: own, agent: 'reviewer' });
    await call('queue_enqueue', { session_id: made.session.id, prompt: 'go', start: false });
    // A session of the family at the default kind takes no prompt from it.
    const wide = (await asOperator(app, 'create_session', { parent_id: own })).session.id;
    await expect(call('message', { action: 'send', session_id: wide, text: 'go' })).rejects.toMatchObject({
      code: 'forbidden',
      message: wider,
    });
    await asOperator(app, 'update_session', { session_id: own, agent: 'build' });
    expect((await app.sessions.require(own)).agent).toBe('build');
  });

  it("does not switch the current session, nor cancel another session's runs", async () => {
    const { app, own, other } = await setup();
    await expect(asAgent(app, own, 'switch_session', { session_id: other })).rejects.toMatchObject({
      code: 'forbidden',
      message: expect.stringContaining('switched by the user'),
    });
    await expect(asAgent(app, own, 'create_session', { switch: true })).rejects.toMatchObject({
      code: 'forbidden',
    });
    expect(await app.agent.currentSession()).not.toBe(other);
    await expect(asAgent(app, own, 'cancel_session_run', { session_id: other })).rejects.toMatchObject({
      code: 'forbidden',
      message: expect.stringContaining('may not cancel the runs of another session'),
    });
    expect(await asOperator(app, 'switch_session', { session_id: other })).toMatchObject({
      session_id: other,
    });
  });
});
