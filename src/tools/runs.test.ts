/**
 * Runs tools and the run ledger readouts. Pins TOOLS-15..25: list_agent_runs filters by
 * session_id or family_session_id (parent and child rows; family wins when both are set), the
 * run tools are registered, update_agent_run takes run_id + action and only cancel (for active
 * runs), runs persist across a restart, and without a run store list and get return errors.
 * Also EVT-31 (tool-appended ledger events in get_agent_run_events) and the HTTP twins
 * GET /v1/agent-runs, /v1/agent-runs/{run_id}/trace and /v1/run-ledger/posture.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { agentApp, echoTool, shellTool } from '../../test/helpers/agent-harness';
import { reply } from '../../test/helpers/fake-provider';
import { makeTestApp } from '../../test/helpers/make-test-app';
import { tmpWorkspace } from '../../test/helpers/tmp-workspace';
import type { App } from '../app';
import { createHttpApp } from '../surfaces/http/index';
import { invokeTool } from './core/call-tool';
import { allTools } from './index';

const call = (app: App, name: string, input: Record<string, unknown> = {}) =>
  invokeTool(app, name, input, { surface: 'mcp' }) as Promise<any>;

/** A parent run that starts an explore sub-agent, then a second top-level session's run. */
async function familyFixture() {
  const { app, provider } = await agentApp(
    [
      reply().toolCall('agent', {
        prompt: 'find the config loader',
        agent: 'explore',
        description: 'find loader',
      }),
      reply().text('src/config/load.ts:12'),
      reply().text('It is in src/config/load.ts.'),
      reply().text('unrelated'),
    ],
    { extraTools: [echoTool] },
  );
  const parent = await app.agent.run({ prompt: 'where is the config loaded?' });
  const other = await app.agent.run({ prompt: 'something else' });
  return { app, provider, parent, other };
}

describe('runs tools', () => {
  it('TOOLS-18: the run tools are registered', async () => {
    const app = await makeTestApp();
    for (const name of [
      'list_agent_runs',
      'get_session_phases',
      'get_agent_run_events',
      'get_agent_run',
      'update_agent_run',
      'fork_agent_run',
      'delete_agent_run',
      'inspect_run_trace',
      'run_ledger_status',
      'list_recent_run_ledger_events',
    ]) {
      expect(app.tools.get(name), name).toBeDefined();
    }
  });

  it('TOOLS-15, TOOLS-16, TOOLS-17: session_id and family_session_id filter; family returns parent and child rows and wins', async () => {
    const { app, parent, other } = await familyFixture();
    const child = (await app.runs.list({ parent_run_id: parent.run_id }))[0];
    expect(child).toMatchObject({
      parent_run_id: parent.run_id,
      family_session_id: parent.session_id,
      agent: 'explore',
    });
    expect(child.session_id).not.toBe(parent.session_id);
    expect((await app.sessions.require(child.session_id)).parent_id).toBe(parent.session_id);

    const all = await call(app, 'list_agent_runs');
    expect(all.runs.map((r: { id: string }) => r.id).sort()).toEqual(
      [parent.run_id, child.id, other.run_id].sort(),
    );

    const bySession = await call(app, 'list_agent_runs', { session_id: parent.session_id });
    expect(bySession.runs.map((r: { id: string }) => r.id)).toEqual([parent.run_id]);
    expect(bySession.filter).toMatchObject({ applied: 'session_id' });

    const byChildSession = await call(app, 'list_agent_runs', { session_id: child.session_id });
    expect(byChildSession.runs.map((r: { id: string }) => r.id)).toEqual([child.id]);

    const byFamily = await call(app, 'list_agent_runs', { family_session_id: parent.session_id });
    expect(byFamily.runs.map((r: { id: string }) => r.id).sort()).toEqual([parent.run_id, child.id].sort());

    const both = await call(app, 'list_agent_runs', {
      session_id: other.session_id,
      family_session_id: parent.session_id,
    });
    expect(both).toEqual(byFamily);
    expect(both.filter).toMatchObject({ applied: 'family_session_id', session_id: null });
  });

  it('the HTTP twins answer with the same payloads', async () => {
    const { app, parent } = await familyFixture();
    const http = createHttpApp(app, { allowNoAuth: true });
    const list = await http.request(`/v1/agent-runs?family_session_id=${parent.session_id}`);
    expect(list.status).toBe(200);
    expect(await list.json()).toEqual(
      await call(app, 'list_agent_runs', { family_session_id: parent.session_id }),
    );
    const trace = await http.request(`/v1/agent-runs/${parent.run_id}/trace`);
    expect(trace.status).toBe(200);
    const body = (await trace.json()) as any;
    expect(body).toEqual(await call(app, 'inspect_run_trace', { run_id: parent.run_id }));
    expect(body.steps).toHaveLength(2);
    expect(body.steps[0].tool_calls).toEqual([
      expect.objectContaining({ tool: 'agent', title: 'agent find loader', is_error: false }),
    ]);
    expect(body.children).toHaveLength(1);
    expect((await http.request('/v1/agent-runs/run_nope/trace')).status).toBe(404);
    const posture = await http.request('/v1/run-ledger/posture');
    expect(await posture.json()).toMatchObject({
      store: { kind: 'sqlite', available: true },
      durable: true,
      runs: { total: 3, by_status: { completed: 3, running: 0 } },
      compat_ledger: { configured: false, enabled: false },
    });
  });

  it('TOOLS-19, TOOLS-20, TOOLS-21: update_agent_run takes run_id + action; cancel cancels an active run; anything else is a clear error', async () => {
    const { app } = await agentApp([reply().hang()]);
    const schema = app.tools.require('update_agent_run').input.safeParse({});
    expect(schema.success).toBe(false);
    expect(schema.error!.issues.map((i) => i.path.join('.')).sort()).toEqual(['action', 'run_id']);
    const sent = await app.agent.send({ prompt: 'hang' });
    await expect(call(app, 'update_agent_run', { run_id: sent.run_id, action: 'pause' })).rejects.toThrow(
      'action: "pause" is not supported; the only action is "cancel" (for queued or running runs)',
    );
    const queued = await app.agent.send({ sessionId: sent.session_id, prompt: 'next' });
    expect(await call(app, 'update_agent_run', { run_id: queued.run_id, action: 'cancel' })).toMatchObject({
      outcome: 'dequeued',
      status: 'cancelled',
    });
    await new Promise((r) => setTimeout(r, 30));
    const cancelled = await call(app, 'update_agent_run', { run_id: sent.run_id, action: 'cancel' });
    expect(cancelled).toMatchObject({ previous_status: 'running', action: 'cancel' });
    expect(await app.agent.wait(sent.run_id)).toMatchObject({ status: 'cancelled' });
    await expect(call(app, 'update_agent_run', { run_id: sent.run_id, action: 'cancel' })).rejects.toThrow(
      `run ${sent.run_id} is cancelled; only queued or running runs can be cancelled`,
    );
    await expect(call(app, 'update_agent_run', { run_id: 'run_nope', action: 'cancel' })).rejects.toThrow(
      'run_id: no run "run_nope"',
    );
  });

  it('TOOLS-23: runs persist across a restart of the app', async () => {
    const { app, parent } = await familyFixture();
    const reopened = await makeTestApp({
      workspace: app.workspace,
      dataDir: app.dataDir,
      env: app.env as Record<string, string>,
      tools: allTools,
    });
    const run = await call(reopened, 'get_agent_run', { run_id: parent.run_id });
    expect(run).toMatchObject({
      run: { id: parent.run_id, status: 'completed', steps: 2 },
      children: [expect.objectContaining({ parent_run_id: parent.run_id })],
      result_text: 'It is in src/config/load.ts.',
    });
  });

  it('TOOLS-25: without a run store, list and get return errors; the posture says why', async () => {
    const ws = tmpWorkspace();
    writeFileSync(join(ws, 'not-a-dir'), 'x');
    const app = await makeTestApp({ workspace: ws, dataDir: join(ws, 'not-a-dir', 'data') });
    await expect(call(app, 'list_agent_runs')).rejects.toThrow(
      /^run ledger unavailable: data dir .* cannot be created \(ENOTDIR\)/,
    );
    await expect(call(app, 'get_agent_run', { run_id: 'run_1' })).rejects.toMatchObject({
      code: 'unavailable',
    });
    expect(await call(app, 'run_ledger_status')).toMatchObject({
      store: { available: false, reason: expect.stringContaining('run ledger unavailable') },
      durable: false,
    });
  });

  it('EVT-31: get_agent_run_events lists events tools append (local_shell_started) alongside phases and tool events', async () => {
    const log: string[] = [];
    const { app } = await agentApp([reply().toolCall('shell', { command: 'npm test' }), reply().text('ok')], {
      extraTools: [shellTool(log)],
    });
    const result = await app.agent.run({ prompt: 'test it', yolo: true });
    const events = await call(app, 'get_agent_run_events', { run_id: result.run_id });
    const types = events.events.map((e: { type: string }) => e.type);
    expect(types).toEqual(
      expect.arrayContaining([
        'phase',
        'tool.started',
        'local_shell_started',
        'tool.finished',
        'run.finished',
      ]),
    );
    const shell = events.events.find((e: { type: string }) => e.type === 'local_shell_started');
    expect(shell.payload).toEqual({ tool_call_id: expect.any(String), command: 'npm test' });
    expect(types.indexOf('local_shell_started')).toBeGreaterThan(types.indexOf('tool.started'));
    const recent = await call(app, 'list_recent_run_ledger_events', { type: 'local_shell_started' });
    expect(recent.events).toHaveLength(1);
    const trace = await call(app, 'inspect_run_trace', { run_id: result.run_id });
    expect(trace.ledger_events.map((e: { type: string }) => e.type)).toEqual(['local_shell_started']);
    expect(trace.steps[0].tool_calls[0].events).toHaveLength(1);
  });

  it('get_session_phases, fork_agent_run and delete_agent_run', async () => {
    const { app, parent } = await familyFixture();
    const phases = await call(app, 'get_session_phases', { session_id: parent.session_id });
    expect(phases.runs[0].phases.map((p: { phase: string }) => p.phase)).toEqual([
      'prompt',
      'model',
      'model',
    ]);
    expect(phases.workflow_phase).toBe('none');

    const fork = await call(app, 'fork_agent_run', { run_id: parent.run_id });
    expect(fork).toMatchObject({ messages_copied: 4, forked_from: { run_id: parent.run_id } });
    expect((await app.sessions.messages(fork.session_id)).map((m) => m.role)).toEqual([
      'user',
      'assistant',
      'tool',
      'assistant',
    ]);
    expect((await app.sessions.require(fork.session_id)).title).toBe('fork of where is the config loaded?');

    const deleted = await call(app, 'delete_agent_run', { run_id: parent.run_id });
    expect(deleted.count).toBe(2); // with its sub-agent run
    expect(await app.runs.get(parent.run_id)).toBeUndefined();
    expect(await app.sessions.messages(parent.session_id)).toHaveLength(4);
  });
});
