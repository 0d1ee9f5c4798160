/**
 * Permissions of agent runs. Pins: with nobody attached a prompt fails at once with how to allow
 * it (the run goes on); an attached surface answers allow once / allow for session / deny;
 * allowed_tools, --yolo, a session grant and a safe (read-only) call skip the prompt; a mutating
 * tool that does not ask itself is asked centrally, once per call; unattended "wait" waits for an
 * answer; cancelling a run while it waits settles the request.
 */
import { describe, expect, it } from 'vitest';
import { agentApp, eventTypes, shellTool, touchTool } from '../../test/helpers/agent-harness';
import { reply } from '../../test/helpers/fake-provider';
import type { App } from '../app';
import type { PermissionDecision } from './permission-service';

/** Answer every permission request with the given decisions, in order. */
function answerWith(app: App, decisions: PermissionDecision[]) {
  const seen: { tool: string; title: string }[] = [];
  app.bus.subscribe('*', (event) => {
    if (event.type !== 'permission.requested') return;
    const payload = event.payload as { request_id: string; tool: string; title: string };
    seen.push({ tool: payload.tool, title: payload.title });
    const decision = decisions.shift() ?? 'deny';
    queueMicrotask(async () => await app.agent.answerPermission(payload.request_id, decision, 'test'));
  });
  return seen;
}

const toolOutputs = async (app: App, sessionId: string) =>
  (await app.sessions.messages(sessionId))
    .flatMap((m) => m.parts)
    .filter((p) => p.type === 'tool-result')
    .map((p) => (p as { output: string }).output);

describe('permission service', () => {
  it('TOOLS-09: fails a prompt at once when nobody is attached, saying how to allow it; the run goes on', async () => {
    const log: string[] = [];
    const { app } = await agentApp([reply().toolCall('touch', { name: 'a' }), reply().text('could not')], {
      extraTools: [touchTool(log)],
    });
    const result = await app.agent.run({ prompt: 'touch a' });
    expect(result).toMatchObject({ status: 'completed', text: 'could not' });
    expect(log).toEqual([]);
    expect(await toolOutputs(app, result.session_id)).toEqual([
      'forbidden: permission needed to touch, but no one is attached to approve it (headless run). Re-run with --yolo, add "touch" to [permissions].allowed_tools, or run it where an operator can answer (TUI, HTTP client)',
    ]);
    expect((await app.runs.events(result.run_id)).map((e) => e.type)).toContain('permission.unattended');
  });

  it('asks the attached surface: allow once runs the tool, and the next call asks again', async () => {
    const log: string[] = [];
    const { app, events } = await agentApp(
      [
        reply().toolCall('touch', { name: 'a' }),
        reply().toolCall('touch', { name: 'b' }),
        reply().text('ok'),
      ],
      { extraTools: [touchTool(log)] },
    );
    app.agent.attach('*', 'test');
    const seen = answerWith(app, ['allow_once', 'allow_once']);
    const result = await app.agent.run({ prompt: 'touch twice' });
    expect(result.status).toBe('completed');
    expect(log).toEqual(['a', 'b']);
    expect(seen).toEqual([
      { tool: 'touch', title: 'touch' },
      { tool: 'touch', title: 'touch' },
    ]);
    const resolved = events.filter((e) => e.type === 'permission.resolved').map((e) => e.payload);
    expect(resolved).toEqual([
      expect.objectContaining({ decision: 'allow_once', by: 'test' }),
      expect.objectContaining({ decision: 'allow_once', by: 'test' }),
    ]);
  });

  it('deny: the tool does not run and the model reads a forbidden error', async () => {
    const log: string[] = [];
    const { app } = await agentApp(
      [reply().toolCall('shell', { command: 'rm -rf build' }), reply().text('ok, not doing it')],
      {
        extraTools: [shellTool(log)],
      },
    );
    app.agent.attach('*', 'test');
    answerWith(app, ['deny']);
    const result = await app.agent.run({ prompt: 'clean' });
    expect(result.status).toBe('completed');
    expect(log).toEqual([]);
    expect((await toolOutputs(app, result.session_id))[0]).toMatch(
      /^forbidden: permission denied by the operator: shell: rm -rf build\. Do not retry/,
    );
  });

  it('allow for session: a grant keyed by tool + scope skips later prompts of the same scope only', async () => {
    const log: string[] = [];
    const { app } = await agentApp(
      [
        reply().toolCall('shell', { command: 'npm test' }),
        reply().toolCall('shell', { command: 'npm run build' }),
        reply().toolCall('shell', { command: 'make all' }),
        reply().text('done'),
      ],
      { extraTools: [shellTool(log)] },
    );
    app.agent.attach('*', 'test');
    const seen = answerWith(app, ['allow_session', 'allow_once']);
    const result = await app.agent.run({ prompt: 'build' });
    expect(result.status).toBe('completed');
    expect(log).toEqual(['npm test', 'npm run build', 'make all']);
    // npm (scope "npm") asked once; make (scope "make") asked again.
    expect(seen.map((s) => s.title)).toEqual(['shell: npm test', 'shell: make all']);
    expect(await app.permissions.grants(result.session_id)).toEqual([
      { session_id: result.session_id, tool: 'shell', scope: 'npm', created_at: expect.any(Number) },
    ]);
  });

  it('CFG-16: allowed_tools, --yolo and safe read-only calls skip the prompt', async () => {
    const log: string[] = [];
    const { app } = await agentApp(
      [
        reply().toolCall('touch', { name: 'allowed' }),
        reply().text('1'),
        reply().toolCall('shell', { command: 'rm x' }),
        reply().text('2'),
        reply().toolCall('shell', { command: 'git status' }),
        reply().text('3'),
      ],
      {
        extraTools: [touchTool(log), shellTool(log)],
        extraConfig: { permissions: { allowed_tools: ['touch'] } },
      },
    );
    expect((await app.agent.run({ prompt: 'a' })).status).toBe('completed');
    expect((await app.agent.run({ prompt: 'b', yolo: true })).status).toBe('completed');
    const third = await app.agent.run({ prompt: 'c' });
    expect(log).toEqual(['allowed', 'rm x', 'git status']);
    const listed = await app.runs.list({ limit: 10 });
    const vias = (
      await Promise.all(listed.map((r) => app.runs.events(r.id, { types: ['permission.allowed'] })))
    )
      .flat()
      .map((e) => e.payload.via);
    expect(vias.sort()).toEqual(['allowed_tools', 'read_only', 'yolo']);
    expect(third.status).toBe('completed');
  });

  it('auto_allow_read_only_bash = false makes a safe call ask too', async () => {
    const log: string[] = [];
    const { app } = await agentApp([reply().toolCall('shell', { command: 'ls' }), reply().text('x')], {
      extraTools: [shellTool(log)],
      extraConfig: { permissions: { auto_allow_read_only_bash: false } },
    });
    const result = await app.agent.run({ prompt: 'list' });
    expect(log).toEqual([]);
    expect((await toolOutputs(app, result.session_id))[0]).toMatch(
      /^forbidden: permission needed to shell: ls/,
    );
  });

  it('asks once, centrally, for a mutating tool that does not ask itself, before it runs', async () => {
    const log: string[] = [];
    const { app } = await agentApp([reply().toolCall('touch', { name: 'x' }), reply().text('ok')], {
      extraTools: [touchTool(log)],
    });
    app.agent.attach('*', 'test');
    const order: string[] = [];
    app.bus.subscribe('*', async (event) => {
      if (event.type !== 'permission.requested') return;
      order.push(`asked with ${log.length} mutations done`);
      await app.agent.answerPermission((event.payload as { request_id: string }).request_id, 'allow_once');
    });
    await app.agent.run({ prompt: 'x' });
    expect(order).toEqual(['asked with 0 mutations done']);
    expect(log).toEqual(['x']);
  });

  it('unattended "wait": the call waits until a surface attaches and answers', async () => {
    const log: string[] = [];
    const { app, events } = await agentApp(
      [reply().toolCall('touch', { name: 'late' }), reply().text('ok')],
      {
        extraTools: [touchTool(log)],
        extraConfig: { permissions: { unattended: 'wait' } },
      },
    );
    app.bus.subscribe('*', (event) => {
      if (event.type !== 'permission.requested') return;
      setTimeout(async () => {
        const detach = app.agent.attach(event.session_id, 'late client');
        const pending = app.agent.pendingPermissions(event.session_id);
        expect(pending).toHaveLength(1);
        await app.agent.answerPermission(pending[0].request_id, 'allow_once', 'late client');
        detach();
      }, 20);
    });
    const result = await app.agent.run({ prompt: 'x' });
    expect(result.status).toBe('completed');
    expect(log).toEqual(['late']);
    expect(eventTypes(events)).toContain('permission.resolved');
  });

  it('cancelling the run while a request waits settles it and cancels the run', async () => {
    const log: string[] = [];
    const { app, events } = await agentApp([reply().toolCall('touch', { name: 'never' })], {
      extraTools: [touchTool(log)],
    });
    app.agent.attach('*', 'test');
    let sessionId = '';
    app.bus.subscribe('*', (event) => {
      if (event.type === 'permission.requested') {
        sessionId = event.session_id;
        queueMicrotask(() => void app.agent.cancel(event.session_id));
      }
    });
    const result = await app.agent.run({ prompt: 'x' });
    expect(result).toMatchObject({ status: 'cancelled', reason: 'cancelled by the operator' });
    expect(log).toEqual([]);
    expect(app.agent.pendingPermissions()).toEqual([]);
    expect(events.find((e) => e.type === 'permission.resolved')?.payload).toMatchObject({
      decision: 'deny',
      by: 'cancel',
    });
    // The dangling call got a result, so the next turn's history is valid.
    expect(await toolOutputs(app, sessionId)).toEqual([expect.stringContaining('did not complete')]);
    expect((await app.agent.state(sessionId)).state).toBe('idle');
  });

  it('answering an unknown or already answered request is a not_found error', () => {
    return agentApp([]).then(async ({ app }) => {
      await expect(app.agent.answerPermission('perm_nope', 'allow_once')).rejects.toThrow(
        'request_id: no pending permission request "perm_nope"',
      );
    });
  });
});
