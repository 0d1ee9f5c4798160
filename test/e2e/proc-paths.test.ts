/**
 * Paths where `mkdir` answers ENOENT under a parent that exists (anything under `/proc`): Node's
 * recursive mkdir never returns there, and svc spun at 100% CPU with no output when its data dir,
 * `HOME` or `XDG_CACHE_HOME` was such a path (src/util/make-dirs.ts). Each command now ends with its
 * usual answer or a clear error. Linux only (procfs); each run bounded by spawnSync's timeout.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';

const COMMAND = resolve(__dirname, '../../bin/svc.cjs');
const workspace = mkdtempSync(join(tmpdir(), 'svc-proc-paths-'));
afterAll(() => rmSync(workspace, { recursive: true, force: true }));

/** `svc <args>` in the temp workspace with only PATH and `env` set (no provider key, no config). */
const svc = (args: string[], env: Record<string, string>) =>
  spawnSync(process.execPath, [COMMAND, ...args], {
    cwd: workspace,
    encoding: 'utf8',
    timeout: 30_000,
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: workspace, ...env },
  });

describe.runIf(process.platform === 'linux')('svc with its paths under /proc', () => {
  it('CLI-FIRST-10: a data dir under /proc: a clear error naming it, exit 2 (a config error; it was 1)', () => {
    const result = svc(['--data-dir', '/proc/svc-e2e/data', 'session', 'list'], {});
    expect(result.signal, 'svc did not end').toBeNull();
    expect(result.status).toBe(2);
    expect(result.stderr).toBe(
      'svc: data dir /proc/svc-e2e/data cannot be created (ENOENT); pass --data-dir or set SVC_DATA_DIR to a writable directory\n',
    );
  });

  it('HOME or XDG_CACHE_HOME under /proc: the commands answer as usual', () => {
    const envs: Record<string, string>[] = [
      { HOME: '/proc/svc-e2e' },
      { XDG_CACHE_HOME: '/proc/svc-e2e/cache' },
    ];
    for (const env of envs) {
      const list = svc(['session', 'list'], env);
      expect(list.signal, `session list with ${JSON.stringify(env)} did not end`).toBeNull();
      expect(list.status, list.stderr).toBe(0);
      // No model is configured: the usual exit 2 with its advice, after the run's caches were tried.
      const run = svc(['run', 'hi'], env);
      expect(run.signal, `run with ${JSON.stringify(env)} did not end`).toBeNull();
      expect(run.status).toBe(2);
      expect(run.stderr).toContain('no model provider is configured');
    }
  });
});
