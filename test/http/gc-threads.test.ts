/**
 * `svc service start http` keeps V8's garbage collection on the main thread (issue 17 item 3,
 * `keepGcOnMainThread` in src/util/heap.ts), observed through V8's own output, not our variable:
 * the built service runs with `--trace-gc-nvp`, which prints per scavenge the time V8's helper
 * threads spent in it (`background.scavenge.parallel`). Module loading alone makes ≈ 6 scavenges,
 * most of them parallel with V8's default. Also: the run-time flag set survives V8's incremental
 * marking (the set with `--no-parallel-marking`, e.g. `--single-threaded-gc` set at run time,
 * aborts V8 11.3 at the first full GC).
 */
import { spawn, spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { MAIN_THREAD_GC_FLAGS } from '../../src/util/heap';
import { BIN } from '../helpers/run-bin';
import { tmpWorkspace } from '../helpers/tmp-workspace';

interface TracedStart {
  /** `background.scavenge.parallel` of each scavenge, in ms. */
  backgroundScavenge: number[];
  stderr: string;
}

/** Starts the built service under `--trace-gc-nvp`, waits for its listening line, stops it. */
async function tracedStart(env: Record<string, string> = {}): Promise<TracedStart> {
  const ws = tmpWorkspace();
  const child = spawn(
    process.execPath,
    ['--trace-gc-nvp', BIN, 'service', 'start', 'http', '--port', '0', '--auth', 'none'],
    {
      cwd: ws,
      env: { PATH: process.env.PATH, HOME: `${ws}/.home`, XDG_CONFIG_HOME: `${ws}/.home/.config`, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let stdout = '';
  let stderr = '';
  child.stderr.on('data', (d) => (stderr += d));
  const closed = new Promise<void>((resolve) => child.on('close', () => resolve()));
  const killer = setTimeout(() => child.kill('SIGKILL'), 30_000);
  await new Promise<void>((resolve) => {
    child.stdout.on('data', (d) => {
      stdout += d;
      // V8 prints the trace through C stdio on the same pipe: the line may not start a line.
      if (stdout.includes('svc: listening on http://')) resolve();
    });
    void closed.then(() => resolve());
  });
  child.kill('SIGTERM');
  await closed;
  clearTimeout(killer);
  expect(stdout, stderr).toContain('svc: listening on http://');
  const backgroundScavenge = [...stdout.matchAll(/gc=s .*?background\.scavenge\.parallel=([\d.]+)/g)].map(
    (m) => Number(m[1]),
  );
  return { backgroundScavenge, stderr };
}

describe('the HTTP service GC threads (built binary)', () => {
  it('ENGINE-CPU-150: svc service start http runs every scavenge with no V8 helper thread', async () => {
    const { backgroundScavenge, stderr } = await tracedStart();
    expect(backgroundScavenge.length).toBeGreaterThanOrEqual(3);
    expect(
      backgroundScavenge.every((ms) => ms === 0),
      backgroundScavenge.join(' '),
    ).toBe(true);
    expect(stderr).not.toContain('SVC_GC_THREADS');
  });

  it("ENGINE-CPU-151: SVC_GC_THREADS=v8 keeps V8's helper threads; another value is named and changes nothing", async () => {
    const v8 = await tracedStart({ SVC_GC_THREADS: 'v8' });
    expect(
      v8.backgroundScavenge.some((ms) => ms > 0),
      v8.backgroundScavenge.join(' '),
    ).toBe(true);
    const bad = await tracedStart({ SVC_GC_THREADS: 'none' });
    expect(bad.stderr).toContain('SVC_GC_THREADS is "main" or "v8", not "none"');
    expect(
      bad.backgroundScavenge.some((ms) => ms > 0),
      bad.backgroundScavenge.join(' '),
    ).toBe(true);
  });

  it('ENGINE-CPU-154: the flags set at run time survive incremental marking and full GCs', () => {
    // Allocation that keeps 300,000 objects alive at a time: the old generation fills, so V8
    // starts incremental marking and finishes it (the step that aborts with --no-parallel-marking).
    const script = `require('v8').setFlagsFromString(process.env.GC_FLAGS);
      let keep = [];
      for (let i = 0; i < 3e6; i++) { keep.push({ i, s: 'x' + i }); if (keep.length > 3e5) keep = []; }
      console.log('done');`;
    const run = spawnSync(process.execPath, ['--trace-gc', '-e', script], {
      env: { PATH: process.env.PATH, GC_FLAGS: MAIN_THREAD_GC_FLAGS.join(' ') },
      encoding: 'utf8',
      timeout: 60_000,
    });
    expect(run.stderr).not.toContain('Check failed');
    expect(run.status, run.stderr).toBe(0);
    expect(run.stdout).toMatch(/Mark-Compact/);
    expect(run.stdout.trim().endsWith('done')).toBe(true);
  });
});
