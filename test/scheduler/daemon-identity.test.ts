/**
 * A `service_processes` row is data, not a command (src/scheduler/lifecycle.ts): stop signals a pid
 * only while it is still the process that registered (start time and boot id), a row without an
 * identity is never signalled (the error says how to stop it by hand), a heartbeat in the future
 * is not alive, and restart rebuilds its command from the row's kind and address, never its argv,
 * in an existing directory.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { identify } from '../../src/sandbox/proc';
import { createDaemonRepository } from '../../src/scheduler/daemon-repository';
import { restartPlan } from '../../src/scheduler/lifecycle';
import { invokeTool } from '../../src/tools/core/call-tool';
import { isolatedEnv, makeTestApp } from '../helpers/make-test-app';
import { tmpWorkspace } from '../helpers/tmp-workspace';

async function identityApp() {
  const workspace = tmpWorkspace();
  const bin = join(workspace, 'main.js');
  writeFileSync(bin, '');
  return makeTestApp({
    workspace,
    env: isolatedEnv(workspace, { SVC_ENABLE_PROCESS_LIFECYCLE_TOOLS: '1', SVC_BIN: bin }),
  });
}

function sleeper(): ChildProcess & { pid: number } {
  const child = spawn('sleep', ['60'], { stdio: 'ignore' });
  onTestFinished(() => {
    child.kill('SIGKILL');
  });
  return child as ChildProcess & { pid: number };
}

const running = (child: ChildProcess) => child.exitCode === null && child.signalCode === null;

async function insertRow(
  app: Awaited<ReturnType<typeof identityApp>>,
  id: string,
  patch: { pid: number; identity: string | null; heartbeat_at?: number; argv?: string[]; cwd?: string },
) {
  await createDaemonRepository(() => app.db).insert({
    id,
    kind: 'autopilot',
    pid: patch.pid,
    host: hostname(),
    url: 'http://127.0.0.1:7999',
    argv: JSON.stringify(patch.argv ?? ['service', 'start', 'autopilot']),
    worker: 'autopilot',
    started_at: app.clock.now(),
    heartbeat_at: patch.heartbeat_at ?? app.clock.now(),
    status: JSON.stringify({ cwd: patch.cwd ?? app.workspace }),
    identity: patch.identity,
  });
}

const identityOf = (pid: number, shift = 0) => {
  const id = identify(pid);
  return JSON.stringify({ start_time: (id.start_time ?? 0) + shift, boot_id: id.boot_id });
};

describe.skipIf(process.platform !== 'linux')('daemon rows are checked before a signal', () => {
  it('a row whose pid is now an unrelated process (another start time) is stale: reported, not signalled', async () => {
    const app = await identityApp();
    const child = sleeper();
    // The daemon that registered had this pid once; the sleep started later under the same pid.
    await insertRow(app, 'dmn_reused', { pid: child.pid, identity: identityOf(child.pid, -1) });
    expect((await app.daemons.get('dmn_reused'))?.alive).toBe(false);
    const status = (await invokeTool(app, 'daemon_status', {}, { surface: 'agent' })) as any;
    expect(status.daemons.find((d: any) => d.id === 'dmn_reused')).toMatchObject({
      alive: false,
      identity: 'mismatch',
    });
    await expect(
      invokeTool(app, 'autopilot_down', { daemon_id: 'dmn_reused' }, { surface: 'agent' }),
    ).rejects.toThrow(/pid \d+ is no longer the process that registered it .*nothing was signalled/);
    await expect(invokeTool(app, 'autopilot_down', {}, { surface: 'agent' })).rejects.toThrow(
      /dmn_reused: .*the row is stale and nothing was signalled/,
    );
    await expect(
      invokeTool(app, 'daemon_restart', { daemon_id: 'dmn_reused' }, { surface: 'agent' }),
    ).rejects.toThrow(/nothing was signalled/);
    expect(running(child)).toBe(true);
  });

  it('a row without an identity (an older svc) is not signalled, and the error says how to stop it', async () => {
    const app = await identityApp();
    const child = sleeper();
    await insertRow(app, 'dmn_old', { pid: child.pid, identity: null });
    expect((await app.daemons.get('dmn_old'))?.identity_check).toBe('unverifiable');
    await expect(invokeTool(app, 'autopilot_down', {}, { surface: 'agent' })).rejects.toThrow(
      `did not signal it; check with ps -o pid,lstart,args -p ${child.pid} and, if it is the svc daemon, stop it with kill ${child.pid}`,
    );
    expect(running(child)).toBe(true);
  });

  it('a row whose identity matches is stopped (SIGTERM)', async () => {
    const app = await identityApp();
    const child = sleeper();
    await insertRow(app, 'dmn_real', { pid: child.pid, identity: identityOf(child.pid) });
    const exited = new Promise((resolve) => child.once('exit', resolve));
    const result = (await invokeTool(app, 'autopilot_down', {}, { surface: 'agent' })) as any;
    expect(result).toMatchObject({ count: 1, stopped: [{ id: 'dmn_real', pid: child.pid }] });
    expect(await exited).toBe(null);
    expect(child.signalCode).toBe('SIGTERM');
  });

  it('a heartbeat in the future is not alive', async () => {
    const app = await identityApp();
    const child = sleeper();
    await insertRow(app, 'dmn_future', {
      pid: child.pid,
      identity: identityOf(child.pid),
      heartbeat_at: app.clock.now() + 365 * 24 * 3600_000,
    });
    await insertRow(app, 'dmn_now', { pid: child.pid, identity: identityOf(child.pid) });
    expect((await app.daemons.get('dmn_future'))?.alive).toBe(false);
    expect((await app.daemons.get('dmn_now'))?.alive).toBe(true);
  });

  it('restart rebuilds svc service start from kind, host and port (never the stored argv) and needs an existing cwd', async () => {
    const app = await identityApp();
    const child = sleeper();
    await insertRow(app, 'dmn_argv', {
      pid: child.pid,
      identity: identityOf(child.pid),
      argv: ['-e', 'require("fs").writeFileSync("/tmp/pwned", "")', '--auth', 'none'],
    });
    const plan = restartPlan(app, (await app.daemons.get('dmn_argv'))!);
    expect(plan.argv).toEqual([
      app.env.SVC_BIN,
      '--cwd',
      app.workspace,
      '--data-dir',
      app.dataDir,
      'service',
      'start',
      'autopilot',
      '--port',
      '7999',
      '--host',
      '127.0.0.1',
      '--auth',
      'none',
    ]);
    expect(plan.cwd).toBe(app.workspace);
    await insertRow(app, 'dmn_gone_cwd', {
      pid: child.pid,
      identity: identityOf(child.pid),
      cwd: join(app.workspace, 'no-such-dir'),
    });
    await expect(
      invokeTool(app, 'daemon_restart', { daemon_id: 'dmn_gone_cwd' }, { surface: 'agent' }),
    ).rejects.toThrow(/no-such-dir is not an existing directory; it was not restarted/);
    expect(running(child)).toBe(true);
  });
});

describe('a daemon row records no secret', () => {
  it('--token and other secret flag values are replaced in the recorded argv, the rest kept', async () => {
    const app = await identityApp();
    try {
      const argv = [
        '/svc/main.js',
        'service',
        'start',
        'http',
        '--token',
        's3cretTOKEN123456',
        '--api-key=sk-live-42',
        '--port',
        '0',
        '--auth',
        'bearer',
      ];
      const row = await app.daemons.register({
        kind: 'http',
        url: 'http://127.0.0.1:1',
        argv,
        cwd: app.workspace,
        worker: null,
      });
      const stored = (
        app.db.prepare('SELECT argv FROM service_processes WHERE id = ?').get(row.id) as { argv: string }
      ).argv;
      expect(stored).not.toContain('s3cretTOKEN123456');
      expect(stored).not.toContain('sk-live-42');
      expect(JSON.parse(stored)).toEqual([
        '/svc/main.js',
        'service',
        'start',
        'http',
        '--token',
        '[REDACTED]',
        '--api-key=[REDACTED]',
        '--port',
        '0',
        '--auth',
        'bearer',
      ]);
    } finally {
      await app.close();
    }
  });
});
