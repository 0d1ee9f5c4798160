/**
 * Process lifecycle tools in process. Pins:
 * - the status tools are registered by default (TOOLS-26); daemon_restart, autopilot_up and
 *   autopilot_down only when SVC_ENABLE_PROCESS_LIFECYCLE_TOOLS is set (TOOLS-27/28), and their
 *   HTTP routes are 404 without it;
 * - a remote lifecycle operation is refused without [deploy] enabled, and with it goes to the
 *   target's command prefix running the same svc command (TOOLS-29);
 * - daemon_status reports spawn_isolation_audit: tracked children with PIDs classified
 *   session_only, runtime_backed or mixed, and the cleanup counters (TOOLS-30).
 */
import { spawn } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createHttpApp } from '../../src/surfaces/http/index';
import { invokeTool } from '../../src/tools/core/call-tool';
import { isolatedEnv, makeTestApp } from '../helpers/make-test-app';
import { tmpWorkspace } from '../helpers/tmp-workspace';

const LIFECYCLE = ['daemon_restart', 'autopilot_up', 'autopilot_down'];
const STATUS = ['daemon_status', 'autopilot_status', 'schedule_inspect'];

async function lifecycleApp(
  options: { env?: Record<string, string>; config?: Record<string, unknown> } = {},
) {
  const workspace = tmpWorkspace();
  return makeTestApp({ workspace, env: isolatedEnv(workspace, options.env ?? {}), config: options.config });
}

describe('lifecycle tool registration', () => {
  it('TOOLS-26 TOOLS-27: status tools are on by default; lifecycle tools are absent without the env var', async () => {
    const app = await lifecycleApp();
    const names = app.tools.registered().map((t) => t.name);
    for (const name of STATUS) expect(names).toContain(name);
    for (const name of LIFECYCLE) expect(names).not.toContain(name);
    const gate = app.tools.gates().find((g) => g.tool.name === 'autopilot_up');
    expect(gate?.reason).toBe('SVC_ENABLE_PROCESS_LIFECYCLE_TOOLS is not set in the process');
    const hono = createHttpApp(app, { allowNoAuth: true });
    expect((await hono.request('/v1/autopilot/up', { method: 'POST', body: '{}' })).status).toBe(404);
    expect((await hono.request('/v1/autopilot/status')).status).toBe(200);
  });

  it('TOOLS-28: the lifecycle tools are registered when SVC_ENABLE_PROCESS_LIFECYCLE_TOOLS is set', async () => {
    const app = await lifecycleApp({ env: { SVC_ENABLE_PROCESS_LIFECYCLE_TOOLS: '1' } });
    const names = app.tools.registered().map((t) => t.name);
    for (const name of [...STATUS, ...LIFECYCLE]) expect(names).toContain(name);
    // Nothing is running: a local stop says so instead of pretending.
    await expect(invokeTool(app, 'autopilot_down', {}, { surface: 'agent' })).rejects.toThrow(
      'no live autopilot daemon in this data dir',
    );
  });
});

describe('remote lifecycle operations', () => {
  it('TOOLS-29: are refused without deploy configuration', async () => {
    const app = await lifecycleApp({ env: { SVC_ENABLE_PROCESS_LIFECYCLE_TOOLS: '1' } });
    for (const name of LIFECYCLE) {
      await expect(invokeTool(app, name, { target: 'prod' }, { surface: 'agent' })).rejects.toThrow(
        /remote lifecycle operations need enabled deploy configuration: set \[deploy\] enabled = true/,
      );
    }
  });

  it('TOOLS-29: with [deploy] enabled, run the svc command on the target through its command prefix', async () => {
    const workspace = tmpWorkspace();
    // A stand-in for `ssh box`: records the command it was asked to run and answers like svc --json.
    const fake = join(workspace, 'fake-ssh.mjs');
    writeFileSync(
      fake,
      "import { appendFileSync } from 'node:fs';\n" +
        "appendFileSync(process.env.FAKE_SSH_LOG, JSON.stringify(process.argv.slice(2)) + '\\n');\n" +
        "process.stdout.write(JSON.stringify({ stopped: [{ id: 'dmn_1', pid: 4242 }], count: 1 }));\n",
    );
    const log = join(workspace, 'ssh.log');
    const app = await makeTestApp({
      workspace,
      env: isolatedEnv(workspace, { SVC_ENABLE_PROCESS_LIFECYCLE_TOOLS: '1', FAKE_SSH_LOG: log }),
      config: {
        deploy: {
          enabled: true,
          targets: {
            box: { command: [process.execPath, fake], host: 'box.internal', workspace: '/srv/app' },
          },
        },
      },
    });
    const result = (await invokeTool(app, 'autopilot_down', { target: 'box' }, { surface: 'agent' })) as any;
    expect(result).toEqual({
      target: 'box',
      host: 'box.internal',
      command: 'autopilot down',
      remote: { stopped: [{ id: 'dmn_1', pid: 4242 }], count: 1 },
    });
    await invokeTool(app, 'daemon_restart', { target: 'box', daemon_id: 'dmn_1' }, { surface: 'agent' });
    expect(
      readFileSync(log, 'utf8')
        .trim()
        .split('\n')
        .map((line) => JSON.parse(line)),
    ).toEqual([
      [
        'env',
        'SVC_ENABLE_PROCESS_LIFECYCLE_TOOLS=1',
        'svc',
        '--cwd',
        '/srv/app',
        'autopilot',
        'down',
        '--json',
      ],
      [
        'env',
        'SVC_ENABLE_PROCESS_LIFECYCLE_TOOLS=1',
        'svc',
        '--cwd',
        '/srv/app',
        'daemon',
        'restart',
        'dmn_1',
        '--json',
      ],
    ]);
    await expect(
      invokeTool(app, 'autopilot_up', { target: 'staging' }, { surface: 'agent' }),
    ).rejects.toThrow('target: no deploy target "staging"; configured: box, or local');
  });
});

describe('daemon_status', () => {
  it('TOOLS-30: reports spawn_isolation_audit with PIDs, classifications and cleanup counters', async () => {
    const app = await lifecycleApp();
    const empty = (await invokeTool(app, 'daemon_status', {}, { surface: 'agent' })) as any;
    expect(empty.this_process.pid).toBe(process.pid);
    expect(empty.spawn_isolation_audit).toMatchObject({
      classification: 'none',
      children: [],
      discovery: 'proc',
    });

    // A session's background job (session_only), a registered runtime child (runtime_backed) and a
    // child nobody registered (found in /proc: mixed).
    const job = (await invokeTool(
      app,
      'bash',
      { command: 'sleep 30', run_in_background: true, description: 'sleep' },
      { surface: 'agent', sessionId: 'ses_x' },
    )) as { job_id: string; pid: number };
    const runtime = spawn('sleep', ['30'], { stdio: 'ignore' });
    const handle = app.processes.register({ pid: runtime.pid!, kind: 'language_server', label: 'lsp fake' });
    const stray = spawn('sleep', ['31'], { stdio: 'ignore' });
    try {
      const report = (await invokeTool(app, 'daemon_status', {}, { surface: 'agent' })) as any;
      const audit = report.spawn_isolation_audit;
      expect(audit.classification).toBe('mixed');
      const byPid = new Map(audit.children.map((c: { pid: number }) => [c.pid, c]));
      expect(byPid.get(job.pid)).toMatchObject({
        kind: 'bash_job',
        isolation: 'session_only',
        session_id: 'ses_x',
        source: 'job',
      });
      expect(byPid.get(runtime.pid)).toMatchObject({
        kind: 'language_server',
        isolation: 'runtime_backed',
        source: 'registered',
      });
      expect(byPid.get(stray.pid)).toMatchObject({ kind: 'other', isolation: 'mixed', source: 'discovered' });
      expect(audit.counts).toEqual({ session_only: 1, runtime_backed: 1, mixed: 1 });
      expect(audit.counters).toMatchObject({
        spawned_total: 3,
        exited_total: 0,
        cleaned_up_total: 0,
        running: 3,
      });

      await invokeTool(app, 'job_kill', { job_id: job.job_id }, { surface: 'agent', sessionId: 'ses_x' });
      runtime.kill();
      handle.cleanedUp();
      const after = (await invokeTool(app, 'daemon_status', {}, { surface: 'agent' })) as any;
      expect(after.spawn_isolation_audit.counters).toMatchObject({ exited_total: 2, cleaned_up_total: 2 });
      expect(after.spawn_isolation_audit.children.map((c: { pid: number }) => c.pid)).not.toContain(job.pid);
    } finally {
      runtime.kill();
      stray.kill();
    }
  });
});
