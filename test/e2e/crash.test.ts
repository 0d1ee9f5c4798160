/**
 * Crash safety of the run ledger, with the built binary. Pins: while `svc run` is mid-run,
 * another `svc run` on the same session is refused (never interleaved); after kill -9 the next
 * start marks the orphaned run `interrupted` and every message already written is kept; the
 * session then continues with a valid history.
 */
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { invokeTool } from '../../src/tools/core/call-tool';
import { allTools } from '../../src/tools/index';
import { fakeProvider, reply } from '../helpers/fake-provider';
import { makeTestApp } from '../helpers/make-test-app';
import { BIN, runBin } from '../helpers/run-bin';
import { tmpWorkspace } from '../helpers/tmp-workspace';
import { until } from '../helpers/until';

describe('svc run crash safety', () => {
  it('refuses a concurrent run; after kill -9 the run is interrupted and its messages are kept', async () => {
    const provider = await fakeProvider([
      reply().text('Let me look.').toolCall('get_workflow_phase', {}),
      reply().hang(),
      reply().text('Continuing after the crash.'),
    ]);
    const ws = tmpWorkspace({
      files: {
        'svc.toml': `[providers.fake]\ntype = "openai-compat"\nbase_url = "${provider.url}"\n[models]\nlarge = "fake/m1"\n`,
      },
    });
    const env = {
      PATH: process.env.PATH,
      HOME: join(ws, '.home'),
      XDG_CONFIG_HOME: join(ws, '.home', '.config'),
      XDG_DATA_HOME: join(ws, '.home', '.local', 'share'),
    };
    const child = spawn(process.execPath, [BIN, 'run', 'do the long thing'], { cwd: ws, env, stdio: 'pipe' });
    let stdout = '';
    let stderr = '';
    let ended = false;
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    const exited = new Promise<NodeJS.Signals | null>((resolve) =>
      child.on('exit', (_code, signal) => {
        ended = true;
        resolve(signal);
      }),
    );
    try {
      // A process start on a loaded CI box (the suite's workers beside it) can take seconds: the
      // bound is generous, and a child that ends before its second call fails at once, with its
      // stderr and the calls the model saw.
      await until(() => ended || provider.requests.length === 2, 'the second model call', 45_000);
      expect(ended, `svc run ended early; stderr: ${stderr}; model calls: ${provider.requests.length}`).toBe(
        false,
      );
      // Let the first step's writes settle (they are synchronous before the next call, but be sure).
      await new Promise((r) => setTimeout(r, 100));

      const observer = await makeTestApp({ workspace: ws, env, tools: allTools });
      const [session] = await observer.sessions.list();
      const [running] = await observer.runs.list({ session_id: session.id });
      expect(running).toMatchObject({ status: 'running', pid: child.pid });

      const concurrent = await runBin(['run', '--session', session.id, 'me too'], { cwd: ws, env });
      expect(concurrent.code).toBe(1);
      expect(concurrent.stderr).toContain(
        `session ${session.id} is busy: run ${running.id} is running in another svc process (pid ${child.pid})`,
      );
      expect(provider.requests).toHaveLength(2);

      child.kill('SIGKILL');
      expect(await exited).toBe('SIGKILL');
      expect(stdout).toBe('Let me look.\n');
      await observer.close();

      // The next start (any command that opens the ledger) marks the orphan interrupted.
      const diagnose = await runBin(['session', 'diagnose', '--format=json'], { cwd: ws, env });
      expect(diagnose.code, diagnose.stderr).toBe(0);
      const report = JSON.parse(diagnose.stdout);
      expect(report).toMatchObject({ session_id: session.id, runs: { total: 1, interrupted: 1 } });
      expect(report.checks).toEqual(
        expect.arrayContaining([
          expect.objectContaining({
            name: 'last_run',
            status: 'warn',
            detail: expect.stringContaining('interrupted'),
          }),
        ]),
      );

      const after = await makeTestApp({ workspace: ws, env, tools: allTools });
      const run = await after.runs.require(running.id);
      expect(run).toMatchObject({
        status: 'interrupted',
        reason: `the process running it (pid ${child.pid}) exited before the run finished`,
        steps: 1,
      });
      expect((await after.runs.events(run.id)).map((e) => e.type)).toEqual(
        expect.arrayContaining(['run.started', 'tool.finished', 'step.finished', 'phase', 'run.interrupted']),
      );
      const messages = await after.sessions.messages(session.id);
      expect(messages.map((m) => m.role)).toEqual(['user', 'assistant', 'tool']);
      expect(messages[0].parts).toEqual([{ type: 'text', text: 'do the long thing' }]);
      expect(messages[1].parts).toEqual([
        { type: 'text', text: 'Let me look.' },
        { type: 'tool-call', tool_call_id: expect.any(String), tool: 'get_workflow_phase', input: {} },
      ]);
      expect(messages[2].parts[0]).toMatchObject({
        type: 'tool-result',
        tool: 'get_workflow_phase',
        is_error: false,
      });
      const listed = (await invokeTool(
        after,
        'list_agent_runs',
        { session_id: session.id },
        { surface: 'mcp' },
      )) as any;
      expect(listed.runs[0]).toMatchObject({ id: running.id, status: 'interrupted' });
      await after.close();

      // The session continues: the stored history goes back to the model as it was.
      const resumed = await runBin(['run', '--session', session.id, 'go on'], { cwd: ws, env });
      expect(resumed).toMatchObject({ code: 0, stdout: 'Continuing after the crash.\n' });
      expect(provider.requests[2].body.messages.slice(1).map((m: { role: string }) => m.role)).toEqual([
        'user',
        'assistant',
        'tool',
        'user',
      ]);
    } finally {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    }
    // Four process starts and a bounded wait of 45 s: more than the suite's 60 s on a loaded box.
  }, 120_000);

  it('Ctrl-C (SIGINT) cancels the run cleanly: exit 1, status cancelled, the session idle', async () => {
    const provider = await fakeProvider([reply().hang()]);
    const ws = tmpWorkspace({
      files: {
        'svc.toml': `[providers.fake]\ntype = "openai-compat"\nbase_url = "${provider.url}"\n[models]\nlarge = "fake/m1"\n`,
      },
    });
    const env = {
      PATH: process.env.PATH,
      HOME: join(ws, '.home'),
      XDG_DATA_HOME: join(ws, '.home', '.local', 'share'),
    };
    const child = spawn(process.execPath, [BIN, 'run', 'wait forever'], { cwd: ws, env, stdio: 'pipe' });
    let stderr = '';
    child.stderr.on('data', (d) => (stderr += d));
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    try {
      await until(() => provider.requests.length === 1, 'the model call');
      child.kill('SIGINT');
      expect(await exited).toBe(1);
      expect(stderr).toBe('svc: run cancelled: interrupted (SIGINT)\n');
      const app = await makeTestApp({ workspace: ws, env, tools: allTools });
      const [run] = await app.runs.list();
      expect(run).toMatchObject({ status: 'cancelled', reason: 'interrupted (SIGINT)' });
      expect(await app.agent.state(run.session_id)).toMatchObject({ state: 'idle', busy_elsewhere: null });
      expect((await app.sessions.messages(run.session_id)).map((m) => m.role)).toEqual(['user']);
      await app.close();
    } finally {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    }
  });
});
