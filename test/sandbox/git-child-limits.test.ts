/**
 * svc's heavy git commands (diff, log, show, reset, gc…) run outside the
 * sandbox on whatever the repository holds: on Linux they run as ripgrep does
 * (src/workspace/child-limits.ts), under a data limit (options.git.memory_limit_mb) and dying
 * with svc (setpriv --pdeathsig), so a huge pack or a pathological diff cannot take the machine's
 * memory and a SIGKILLed svc leaves no git behind. The light ones (rev-parse, status…) run plain:
 * the wrapper's two execs would cost more than the command. A fake `git` first on PATH reports
 * the limits it runs under and hands over to the real one (a `diff` with GIT_TEST_FAKE_PIDFILE set
 * writes its pid there and sleeps instead; with GIT_TEST_FAKE_LIMITS set it also appends its data
 * limit and arguments there, for callers that keep no stderr).
 */
import { execFileSync, spawn } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { gitRunnerFor } from '../../src/observe/git-state';
import { invokeTool } from '../../src/tools/core/call-tool';
import { createGitRunner } from '../../src/workspace/git';
import { isolatedEnv, makeTestApp } from '../helpers/make-test-app';
import { tmpWorkspace } from '../helpers/tmp-workspace';

const MiB = 1024 * 1024;
const realGit = execFileSync('sh', ['-c', 'command -v git'], { encoding: 'utf8' }).trim();

/** A directory holding the fake git, and the PATH that finds it first. */
function fakeGit(): { path: string } {
  const dir = join(tmpWorkspace(), 'bin');
  mkdirSync(dir);
  writeFileSync(
    join(dir, 'git'),
    `#!/bin/sh
echo "limits: $(grep 'Max data size' /proc/$$/limits)" >&2
[ -n "$GIT_TEST_FAKE_LIMITS" ] && echo "$(grep 'Max data size' /proc/$$/limits | awk '{print $4}') $*" >> "$GIT_TEST_FAKE_LIMITS"
case " $* " in *" diff "*) if [ -n "$GIT_TEST_FAKE_PIDFILE" ]; then echo $$ > "$GIT_TEST_FAKE_PIDFILE"; exec sleep 60; fi;; esac
exec ${realGit} "$@"
`,
  );
  chmodSync(join(dir, 'git'), 0o755);
  return { path: `${dir}:${process.env.PATH}` };
}

/** The data limit the fake git reported on stderr, in bytes ('unlimited' when none). */
const dataLimit = (stderr: string) => /limits: Max data size\s+(\S+)/.exec(stderr)?.[1];

const gone = (pid: number) => {
  try {
    process.kill(pid, 0);
    return false;
  } catch {
    return true;
  }
};

describe.runIf(process.platform === 'linux')('git children of svc', () => {
  it('GIT-LIMIT-1 a heavy git runs under options.git.memory_limit_mb; a light one runs plain', async () => {
    const ws = tmpWorkspace({ git: true, files: { 'a.txt': 'a\n' } });
    const { path } = fakeGit();
    let limitMb = 256;
    const git = createGitRunner(
      ws,
      { ...process.env, PATH: path },
      { memoryLimitBytes: () => limitMb * MiB },
    );
    const diff = await git.run(['diff', '--stat']);
    expect(dataLimit(diff.stderr)).toBe(String(256 * MiB));
    const light = await git.run(['rev-parse', '--show-toplevel']);
    expect(light.stdout.trim()).toBe(ws);
    expect(dataLimit(light.stderr)).toBe('unlimited');
    // Read at each call; 0: no limit (the heavy git still dies with svc: GIT-LIMIT-2).
    limitMb = 0;
    expect(dataLimit((await git.run(['diff', '--stat'])).stderr)).toBe('unlimited');
    // Unconfigured: the default, 2048 MiB.
    const plain = createGitRunner(ws, { ...process.env, PATH: path });
    expect(dataLimit((await plain.run(['log', '-1', '--format=%H'])).stderr)).toBe(String(2048 * MiB));
    // A checkpoint's own commands run plain (git.ts HEAVY_GIT says why).
    expect(dataLimit((await plain.run(['add', '-A', '--dry-run'])).stderr)).toBe('unlimited');
  });

  it("GIT-LIMIT-5 the readouts' git runs its heavy commands under the configured limit, 0 as none", async () => {
    const ws = tmpWorkspace({ git: true, files: { 'a.txt': 'a\n' } });
    const { path } = fakeGit();
    const app = await makeTestApp({
      workspace: ws,
      env: isolatedEnv(ws, { PATH: path }),
      config: { options: { git: { memory_limit_mb: 64 } } },
    });
    // The readouts' runner (their git today is light: rev-parse, status, check-ignore).
    const git = gitRunnerFor(app);
    expect(dataLimit((await git.run(['log', '-1', '--format=%H'])).stderr)).toBe(String(64 * MiB));
    // Read at each call, from the config of the moment.
    writeFileSync(join(ws, 'svc.toml'), '[options.git]\nmemory_limit_mb = 0\n');
    app.reloadConfig();
    expect(dataLimit((await git.run(['log', '-1', '--format=%H'])).stderr)).toBe('unlimited');
  });

  it("GIT-LIMIT-6 analyze_ripple_impact's git diff of the working tree runs under the configured limit", async () => {
    const ws = tmpWorkspace({ git: true, files: { 'a.ts': 'export const a = 1;\n' } });
    writeFileSync(join(ws, 'a.ts'), 'export const a = 2;\n');
    const { path } = fakeGit();
    const log = join(tmpWorkspace(), 'limits.log');
    const app = await makeTestApp({
      workspace: ws,
      env: isolatedEnv(ws, { PATH: path, GIT_TEST_FAKE_LIMITS: log }),
      config: { options: { git: { memory_limit_mb: 64 } } },
    });
    const result = (await invokeTool(app, 'analyze_ripple_impact', {}, { surface: 'cli' })) as {
      source: string;
      changed: { path: string }[];
    };
    expect(result.source).toBe('git');
    expect(result.changed.map((c) => c.path)).toContain('a.ts');
    // The data limit of each `git diff` (svc's own -c settings come before the verb).
    const diffs = readFileSync(log, 'utf8')
      .split('\n')
      .filter((line) => / diff --name-only /.test(line))
      .map((line) => line.split(' ')[0]);
    expect(diffs).toEqual([String(64 * MiB)]);
  });

  it('GIT-LIMIT-3 a heavy git past its limit ends with a conflict naming the limit and the option', async () => {
    const line = `${'x'.repeat(99)}\n`;
    const ws = tmpWorkspace({ git: true, files: { 'big.txt': line.repeat(160_000) } });
    writeFileSync(join(ws, 'big.txt'), line.replace('x', 'y').repeat(160_000));
    const git = createGitRunner(ws, process.env, { memoryLimitBytes: () => 8 * MiB });
    const outcome = await git.run(['diff', '--', 'big.txt']).then(
      () => undefined,
      (error: Error) => error,
    );
    expect(outcome).toMatchObject({
      code: 'conflict',
      details: { reason: 'memory', memory_limit_bytes: 8 * MiB },
    });
    expect(outcome?.message).toMatch(
      /^git diff was stopped: it ran out of its 8 MiB memory limit .*raise options\.git\.memory_limit_mb$/,
    );
    // Within the limit (the default) the same diff answers.
    expect((await createGitRunner(ws, process.env).run(['diff', '--stat'])).stdout).toContain('big.txt');
  });

  it('GIT-LIMIT-2 a heavy git dies with a SIGKILLed svc (setpriv --pdeathsig)', async () => {
    const ws = tmpWorkspace({ git: true, files: { 'a.txt': 'a\n' } });
    const { path } = fakeGit();
    const pidFile = join(tmpWorkspace(), 'git.pid');
    const unrun = resolve(__dirname, '../../node_modules/.bin/unrun');
    const child = spawn(unrun, [join(__dirname, 'git-exit-child.ts'), ws, path], {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, GIT_TEST_FAKE_PIDFILE: pidFile },
    });
    const exited = new Promise<void>((done) => child.on('close', () => done()));
    const guard = setTimeout(() => child.kill('SIGKILL'), 20_000);
    let gitPid = 0;
    try {
      let stdout = '';
      child.stdout.on('data', (d) => (stdout += d));
      for (let i = 0; i < 500 && !(stdout.endsWith('\n') && existsSync(pidFile)); i++) await sleep(20);
      const svcPid = Number(stdout.trim());
      gitPid = Number(readFileSync(pidFile, 'utf8').trim());
      expect(gone(gitPid)).toBe(false);
      process.kill(svcPid, 'SIGKILL');
      await exited;
      // Killed with its parent and reaped by init: gone within a bounded wait.
      for (let i = 0; i < 500 && !gone(gitPid); i++) await sleep(20);
      expect(gone(gitPid)).toBe(true);
    } finally {
      clearTimeout(guard);
      if (gitPid && !gone(gitPid)) process.kill(gitPid, 'SIGKILL');
    }
  }, 30_000);
});
