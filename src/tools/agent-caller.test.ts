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
