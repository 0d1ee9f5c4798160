/**
 * Status readouts of the agent core, from real state: session_diagnose (a fresh workspace, a
 * healthy session, a model that cannot resolve), stats_report, list_projects, logs_report, and
 * TOOLS-22: cancel_session_run cancels a session's run.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { agentApp, echoTool } from '../../test/helpers/agent-harness';
import { reply } from '../../test/helpers/fake-provider';
import { makeTestApp } from '../../test/helpers/make-test-app';
import type { App } from '../app';
import { invokeTool } from './core/call-tool';

const call = (app: App, name: string, input: Record<string, unknown> = {}) =>
  invokeTool(app, name, input, { surface: 'cli' }) as Promise<any>;

describe('agent status tools', () => {
  it('session_diagnose reports a fresh workspace and a model that cannot resolve', async () => {
    const app = await makeTestApp();
    const report = await call(app, 'session_diagnose');
    expect(report).toMatchObject({ session_id: null, ok: false, session: null });
    expect(report.checks).toEqual([
      { name: 'run_ledger', status: 'ok', detail: expect.stringContaining('svc.db') },
      { name: 'session', status: 'warn', detail: 'no sessions yet; start one with svc run "<prompt>"' },
      { name: 'model', status: 'error', detail: expect.stringContaining('no model provider is configured') },
    ]);
  });

  it('session_diagnose, stats_report and list_projects describe real runs', async () => {
    const { app } = await agentApp(
      [reply().toolCall('echo', { text: 'a' }).usage(50, 5), reply().text('done').usage(60, 4)],
      { extraTools: [echoTool], modelInfo: { context_window: 8000, cost_per_1m_in: 1, cost_per_1m_out: 2 } },
    );
    const run = await app.agent.run({ prompt: 'go', origin: 'cli' });
    const report = await call(app, 'session_diagnose', { session_id: run.session_id });
    expect(report).toMatchObject({
      ok: true,
      runs: { total: 1, failed: 0, interrupted: 0, last_run_id: run.run_id },
      history: { messages: 4, dangling_tool_calls: 0, compactions: 0 },
    });
    expect(report.checks.find((c: { name: string }) => c.name === 'model')).toEqual({
      name: 'model',
      status: 'ok',
      detail: expect.stringMatching(/^fake\/m1 \(.+\), context window 8000$/),
    });
    const stats = await call(app, 'stats_report');
    expect(stats).toMatchObject({
      sessions: { total: 1, top_level: 1, subagent: 0 },
      messages: { total: 4, by_role: { user: 1, assistant: 2, tool: 1 } },
      runs: { total: 1, by_status: { completed: 1 }, by_origin: { cli: 1 }, average_steps: 2 },
      tokens: { input: 110, output: 9 },
      models: [{ model: 'fake/m1', messages: 2, input_tokens: 110, output_tokens: 9 }],
      tools: [{ tool: 'echo', calls: 1, errors: 0 }],
      days: [{ date: '2026-11-22', runs: 1 }],
    });
    expect(stats.cost).toBeCloseTo((110 * 1 + 9 * 2) / 1e6, 9);
    const projects = await call(app, 'list_projects');
    expect(projects).toMatchObject({
      count: 1,
      projects: [{ path: app.workspace, runs: 1, git_root: null }],
    });
  });

  it('logs_report reads the log tail: counts by level, newest entries first, from a level up', async () => {
    const app = await makeTestApp();
    mkdirSync(join(app.dataDir, 'logs'), { recursive: true });
    const lines = [
      { level: 'info', message: 'started', time: 't1' },
      { level: 'warn', message: 'slow provider', time: 't2', provider: 'fake' },
      { level: 'error', message: 'tool failed', time: 't3', error: { message: 'boom' } },
    ];
    writeFileSync(
      join(app.dataDir, 'logs', 'svc.log'),
      `${lines.map((l) => JSON.stringify(l)).join('\n')}\nnot json\n`,
    );
    const report = await call(app, 'logs_report', { limit: 5 });
    expect(report).toMatchObject({
      exists: true,
      counts: { info: 1, warn: 1, error: 1 },
      entries: [
        { time: 't3', level: 'error', message: 'tool failed', fields: { error: { message: 'boom' } } },
        { time: 't2', level: 'warn', message: 'slow provider', fields: { provider: 'fake' } },
      ],
    });
  });

  it("TOOLS-22: cancel_session_run cancels the current or a given session's run", async () => {
    const { app } = await agentApp([reply().hang()]);
    const sent = await app.agent.send({ prompt: 'long' });
    await new Promise((r) => setTimeout(r, 30));
    expect(await call(app, 'cancel_session_run', { session_id: sent.session_id })).toEqual({
      session_id: sent.session_id,
      cancelled_run_id: sent.run_id,
      cleared: [],
    });
    expect(await app.agent.wait(sent.run_id)).toMatchObject({ status: 'cancelled' });
    expect(await call(app, 'cancel_session_run', { session_id: sent.session_id })).toMatchObject({
      cancelled_run_id: null,
    });
  });
});
