/**
 * Staged workflow and plans. Pins TOOLS-42 (the planning tools this core owns are registered),
 * TOOLS-43 (set_plan_artifact stores markdown; get_plan returns it), TOOLS-45 (no submit_plan),
 * TOOLS-46 (approve_plan moves planning → execute; asked of the operator when the agent calls
 * it), return_to_plan, clear_plan, and the funnel withholding mutating tools in planning.
 */
import { describe, expect, it } from 'vitest';
import { agentApp, touchTool } from '../../test/helpers/agent-harness';
import { reply } from '../../test/helpers/fake-provider';
import { makeTestApp } from '../../test/helpers/make-test-app';
import type { App } from '../app';
import { invokeTool } from './core/call-tool';

const call = (app: App, name: string, input: Record<string, unknown> = {}) =>
  invokeTool(app, name, input, { surface: 'cli' }) as Promise<any>;

describe('staged workflow', () => {
  it('TOOLS-42, TOOLS-45: the planning tools are registered and there is no submit_plan', async () => {
    const app = await makeTestApp();
    for (const name of [
      'set_plan_artifact',
      'get_workflow_phase',
      'get_staged_workflow_status',
      'approve_plan',
      'return_to_plan',
      'get_plan',
      'clear_plan',
      'summarize_session',
    ]) {
      expect(app.tools.get(name), name).toBeDefined();
    }
    expect(app.tools.get('submit_plan')).toBeUndefined();
  });

  it('TOOLS-02, TOOLS-03, TOOLS-04, TOOLS-43, TOOLS-46: plan → planning (mutations withheld) → approve → execute → return → clear', async () => {
    const log: string[] = [];
    const { app } = await agentApp([], { extraTools: [touchTool(log)] });
    const session = await app.agent.createSession({ title: 'planned' });
    const markdown = '# Plan\n\n1. Edit `a.ts`\n2. Run `npm test`\n';
    const set = await call(app, 'set_plan_artifact', { session_id: session.id, markdown, title: 'fix a' });
    expect(set).toMatchObject({
      phase: 'planning',
      plan: { title: 'fix a', revision: 1, chars: markdown.length },
    });
    expect(await call(app, 'get_plan', { session_id: session.id })).toMatchObject({
      phase: 'planning',
      plan: { markdown, revision: 1 },
    });
    const status = await call(app, 'get_staged_workflow_status', { session_id: session.id });
    expect(status).toMatchObject({
      enabled: true,
      phase: 'planning',
      has_plan: true,
      next_action: expect.stringContaining('/approve'),
    });
    expect(status.withheld_tools).toContain('touch');
    expect(app.funnel(await app.funnelContext(session.id)).find((e) => e.name === 'touch')).toMatchObject({
      effective: false,
      removed_by: 'mode',
    });

    expect(await call(app, 'approve_plan', { session_id: session.id })).toMatchObject({
      phase: 'execute',
      previous: 'planning',
      changed: true,
    });
    expect(app.funnel(await app.funnelContext(session.id)).find((e) => e.name === 'touch')?.effective).toBe(
      true,
    );
    expect(await call(app, 'approve_plan', { session_id: session.id })).toMatchObject({ changed: false });

    expect(await call(app, 'return_to_plan', { session_id: session.id, reason: 'tests fail' })).toMatchObject(
      {
        phase: 'planning',
        previous: 'execute',
      },
    );
    expect((await call(app, 'get_workflow_phase', { session_id: session.id })).phase).toBe('planning');
    expect(await call(app, 'clear_plan', { session_id: session.id })).toMatchObject({
      cleared: true,
      phase: 'none',
    });
    expect(await call(app, 'get_plan', { session_id: session.id })).toMatchObject({
      plan: null,
      phase: 'none',
    });
    const history = (await call(app, 'get_staged_workflow_status', { session_id: session.id })).history;
    expect(history.map((h: { from: string; to: string }) => `${h.from}→${h.to}`)).toEqual([
      'none→planning',
      'planning→execute',
      'execute→planning',
      'planning→none',
    ]);
    await expect(call(app, 'approve_plan', { session_id: session.id })).rejects.toThrow(
      'has no plan to approve',
    );
  });

  it('an agent in plan mode writes a plan; its approve_plan asks the operator', async () => {
    const { app, provider } = await agentApp([
      reply().toolCall('set_plan_artifact', { markdown: '1. do it' }),
      reply().toolCall('approve_plan', {}),
      reply().text('Plan written; waiting for approval.'),
    ]);
    const result = await app.agent.run({ prompt: 'plan the change', agent: 'plan' });
    expect(result.status).toBe('completed');
    const tools = provider.requests[0].body.tools.map((t: { function: { name: string } }) => t.function.name);
    expect(tools).toContain('set_plan_artifact');
    expect(tools).not.toContain('delete_session'); // read-only agent kind: mutating tools withheld
    const outputs = (await app.sessions.messages(result.session_id))
      .flatMap((m) => m.parts)
      .filter((p) => p.type === 'tool-result')
      .map((p) => (p as { output: string }).output);
    expect(outputs[1]).toMatch(/^forbidden: permission needed to approve the plan and start executing it/);
    expect((await app.sessions.require(result.session_id)).metadata.workflow_phase).toBe('planning');
  });
});
