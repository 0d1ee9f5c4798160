/**
 * No orphans (issue 15, item 5), with the built `svc` killed by SIGKILL in the middle of a bash
 * call. Pins:
 * - inside the sandbox the command dies with svc, at once;
 * - without it (mode off) the command and a background job survive svc, and the next svc to open
 *   the ledger kills them (their pid and start time were recorded) and says so in
 *   `session diagnose`;
 * - a pid the kernel reused for another process is never killed (the start time differs);
 * - `svc run` says once, on stderr, that commands run without the OS sandbox, with the install
 *   command, when bubblewrap cannot be used.
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it, onTestFinished } from 'vitest';
import { identify, killSurvivors } from '../../src/sandbox/proc';
import { fakeProvider, reply } from '../helpers/fake-provider';
import { isolatedEnv } from '../helpers/make-test-app';
import { BIN, runBin } from '../helpers/run-bin';
import { tmpWorkspace } from '../helpers/tmp-workspace';

function pids(pattern: string): number[] {
  try {
    // The sleep itself, not the shell whose command line names it too.
    return execFileSync('pgrep', ['-f', `^${pattern}$`], { encoding: 'utf8' })
      .split('\n')
      .filter(Boolean)
      .map(Number);
  } catch {
    return [];
  }
}

async function until(check: () => boolean, ms = 40_000): Promise<boolean> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (check()) return true;
    await sleep(100);
  }
  return check();
}

async function workspaceWith(providerUrl: string, sandbox: string) {
  const ws = tmpWorkspace({
    files: {
      'svc.toml': `[providers.fake]\ntype = "openai-compat"\nbase_url = "${providerUrl}"\n[models]\nlarge = "fake/m1"\n[options.sandbox]\n${sandbox}\n`,
    },
  });
  // Trusted: the tests set options.sandbox keys the workspace gate would otherwise note on stderr.
  return { ws, env: { ...isolatedEnv(ws), SVC_TRUST_WORKSPACE: '1' } };
}

function startRun(ws: string, env: Record<string, string | undefined>): ChildProcess {
  const child = spawn(process.execPath, [BIN, 'run', '--yolo', 'start the server'], {
    cwd: ws,
    env: env as NodeJS.ProcessEnv,
    stdio: 'ignore',
  });
  onTestFinished(() => {
    if (child.exitCode === null) child.kill('SIGKILL');
  });
  return child;
}

const marker = () => `${9000 + Math.floor(Math.random() * 999)}.${Math.floor(Math.random() * 99)}`;

describe('no orphans after svc is killed', () => {
  it('inside the sandbox the command dies with svc', async () => {
    const m = marker();
    const provider = await fakeProvider([
      reply().toolCall('bash', { command: `sleep ${m}` }),
      reply().text('done'),
    ]);
    const { ws, env } = await workspaceWith(provider.url, 'mode = "auto"');
    const svc = startRun(ws, env);
    expect(await until(() => pids(`sleep ${m}`).length > 0)).toBe(true);
    svc.kill('SIGKILL');
    expect(await until(() => pids(`sleep ${m}`).length === 0, 5_000)).toBe(true);
  }, 60_000);

  it('without it, the next svc kills what the killed one left and says so in session diagnose', async () => {
    const fg = marker();
    const bg = marker();
    const provider = await fakeProvider([
      reply().toolCall('bash', { command: `sleep ${bg}`, run_in_background: true }),
      reply().toolCall('bash', { command: `sleep ${fg} & sleep ${fg}; wait` }),
      reply().text('done'),
    ]);
    const { ws, env } = await workspaceWith(provider.url, 'mode = "off"');
    const svc = startRun(ws, env);
    expect(await until(() => pids(`sleep ${fg}`).length === 2 && pids(`sleep ${bg}`).length === 1)).toBe(
      true,
    );
    const left = [...pids(`sleep ${fg}`), ...pids(`sleep ${bg}`)];
    svc.kill('SIGKILL');
    await until(() => svc.exitCode !== null || svc.signalCode !== null);
    await sleep(300);
    // Nothing stopped them: they outlive svc.
    expect([...pids(`sleep ${fg}`), ...pids(`sleep ${bg}`)]).toEqual(left);

    const diagnose = await runBin(['session', 'diagnose', '--json'], { cwd: ws, env });
    expect(diagnose.code, diagnose.stderr).toBe(0);
    expect(
      await until(() => pids(`sleep ${fg}`).length === 0 && pids(`sleep ${bg}`).length === 0, 5_000),
    ).toBe(true);
    const report = JSON.parse(diagnose.stdout) as {
      checks: { name: string; status: string; detail: string }[];
    };
    const orphans = report.checks.find((c) => c.name === 'orphan_processes');
    expect(orphans).toMatchObject({
      status: 'warn',
      detail: expect.stringMatching(
        /^2 process\(es\) an interrupted run left running were killed when svc started again: /,
      ),
    });
    expect(orphans?.detail).toContain(`(job: sleep ${bg})`);
    expect(orphans?.detail).toContain(`(bash: sleep ${fg} & sleep ${fg}; wait)`);
    expect(report.checks.find((c) => c.name === 'interrupted_runs')).toMatchObject({ status: 'warn' });
    // Reaped once: a second look finds nothing left to do.
    const again = await runBin(['session', 'diagnose', '--json'], { cwd: ws, env });
    expect(
      JSON.parse(again.stdout).checks.find((c: { name: string }) => c.name === 'orphan_processes'),
    ).toEqual(orphans);
  }, 90_000);

  it('never kills a process whose pid was reused (the start time differs)', async () => {
    const m = marker();
    const child = spawn('sleep', [m], { detached: true, stdio: 'ignore' });
    onTestFinished(() => {
      child.kill('SIGKILL');
    });
    const identity = identify(child.pid!);
    expect(identity.start_time).toEqual(expect.any(Number));
    expect(killSurvivors({ ...identity, start_time: (identity.start_time ?? 0) - 1 })).toEqual([]);
    expect(pids(`sleep ${m}`)).toEqual([child.pid]);
    expect(killSurvivors(identity)).toEqual([child.pid]);
    expect(await until(() => pids(`sleep ${m}`).length === 0, 5_000)).toBe(true);
  });

  it('svc run says once that commands run without the OS sandbox, with the install command', async () => {
    const provider = await fakeProvider([
      reply().toolCall('bash', { command: 'echo one' }),
      reply().toolCall('bash', { command: 'echo two' }),
      reply().text('done'),
    ]);
    const { ws, env } = await workspaceWith(provider.url, 'bwrap_path = "/nonexistent/bwrap"');
    const result = await runBin(['run', '--yolo', 'go'], { cwd: ws, env });
    expect(result.code, result.stderr).toBe(0);
    expect(result.stderr).toBe(
      'svc: no OS sandbox for commands: options.sandbox.bwrap_path /nonexistent/bwrap is not an executable file; bash runs under svc\'s parse-based rules only. Install bubblewrap: apt-get install bubblewrap (set options.sandbox.mode = "off" to silence this)\n',
    );
    const sandboxed = await workspaceWith(provider.url, 'mode = "auto"');
    provider.push(reply().text('fine'));
    const quiet = await runBin(['run', 'hello'], { cwd: sandboxed.ws, env: sandboxed.env });
    expect(quiet).toMatchObject({ code: 0, stderr: '' });
  }, 60_000);
});
