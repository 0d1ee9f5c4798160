/**
 * ripgrep runs outside the sandbox (the file walker of ls, glob, grep, workspace_snapshot,
 * describe_context), and a command can leave a FIFO where it opens a file: `mkfifo sub/.gitignore`
 * held workspace_snapshot forever, and its ripgrep outlived svc (found by probing). Now a ripgrep
 * waiting to open a FIFO is stopped within a second (src/workspace/fifo-wait.ts, ripgrep.ts): the
 * walkers refuse with a message naming the FIFO, grep answers with what it found and a note naming
 * it. Where /proc shows nothing, the time limit stops it; closing the workspace or exiting svc's
 * process kills every ripgrep still running. Each check looks the ripgrep up by pid afterwards.
 */
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, rmSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { createPathResolver } from '../../src/workspace/paths';
import { runningRg } from '../../src/workspace/ripgrep';
import { createSearchOps } from '../../src/workspace/search';
import { tmpWorkspace } from '../helpers/tmp-workspace';
import { toolHarness } from '../tools/harness';

/** A pid that no longer names a process (the ripgrep was killed and reaped). */
function gone(pid: number): boolean {
  return !existsSync(`/proc/${pid}`);
}

/** `work`'s outcome, and the pids of the ripgreps that ran while it did. */
async function watched<T>(work: Promise<T>): Promise<{ outcome: T | Error; pids: number[] }> {
  const pids = new Set<number>();
  let settled = false;
  const outcome = work.then(
    (value) => value,
    (error: Error) => error,
  );
  void outcome.finally(() => {
    settled = true;
  });
  while (!settled) {
    for (const pid of runningRg()) pids.add(pid);
    await sleep(20);
  }
  return { outcome: await outcome, pids: [...pids] };
}

/** A workspace with files beside and under `sub/`, whose `.gitignore` is a FIFO. */
function fifoWorkspace(files: Record<string, string> = {}) {
  return {
    files: { 'a.txt': 'needle\n', 'sub/b.txt': 'needle\n', ...files },
    plant: (ws: string) => execFileSync('mkfifo', [join(ws, 'sub', '.gitignore')]),
  };
}

describe.runIf(process.platform === 'linux')('ripgrep and a FIFO where it opens a file', () => {
  it('a FIFO as sub/.gitignore: ls, glob and workspace_snapshot refuse naming it, grep answers with a note naming it; no ripgrep is left', async () => {
    const setup = fifoWorkspace();
    const h = await toolHarness({ files: setup.files });
    try {
      setup.plant(h.app.workspace);
      // Another FIFO, one ripgrep passes over: the message names the one it waits on.
      execFileSync('mkfifo', [join(h.app.workspace, 'pipe')]);
      const refusal =
        /^the file walk was stopped: ripgrep was waiting to open the FIFO sub\/\.gitignore \(a named pipe, which waits for a writer that never comes\); remove it or make it a regular file \(`find \. -type p` lists them/;
      for (const [tool, input] of [
        ['ls', {}],
        ['glob', { pattern: '**/*.txt' }],
        ['workspace_snapshot', {}],
      ] as const) {
        const { outcome, pids } = await watched(h.call(tool, input));
        expect(outcome, tool).toBeInstanceOf(Error);
        expect((outcome as Error).message, tool).toMatch(refusal);
        expect(outcome, tool).toMatchObject({
          code: 'conflict',
          details: { reason: 'fifo', fifos: ['sub/.gitignore'] },
        });
        expect(pids.length, tool).toBeGreaterThan(0);
        expect(
          pids.filter((pid) => !gone(pid)),
          tool,
        ).toEqual([]);
      }
      const { outcome, pids } = await watched(h.call('grep', { pattern: 'needle', output_mode: 'files' }));
      expect(outcome).toMatchObject({
        files: expect.arrayContaining(['a.txt']),
        truncated: true,
        note: expect.stringMatching(
          /^stopped early: ripgrep was waiting to open the FIFO sub\/\.gitignore \(a named pipe\); these are the results found until then/,
        ),
      });
      expect(pids.length).toBeGreaterThan(0);
      expect(pids.filter((pid) => !gone(pid))).toEqual([]);
    } finally {
      rmSync(join(h.app.workspace, 'sub', '.gitignore'), { force: true });
      await h.app.close();
    }
  }, 60_000);

  it('a FIFO as a file grep would search is passed over: grep and glob answer at once, without a note', async () => {
    const h = await toolHarness({ files: { 'a.txt': 'needle\n', 'sub/b.txt': 'needle\n' } });
    try {
      execFileSync('mkfifo', [join(h.app.workspace, 'sub', 'data.txt')]);
      const { outcome, pids } = await watched(h.call('grep', { pattern: 'needle', output_mode: 'files' }));
      expect(outcome).toMatchObject({ files: ['a.txt', 'sub/b.txt'], total: 2, truncated: false });
      expect(outcome).not.toHaveProperty('note');
      expect(pids.filter((pid) => !gone(pid))).toEqual([]);
      expect(await h.call('glob', { pattern: 'sub/*' })).toMatchObject({ files: ['sub/b.txt'] });
    } finally {
      rmSync(join(h.app.workspace, 'sub', 'data.txt'), { force: true });
      await h.app.close();
    }
  }, 30_000);

  it('where /proc shows no wait, the time limit stops ripgrep; closing the workspace stops one still running', async () => {
    const setup = fifoWorkspace();
    const root = tmpWorkspace({ files: setup.files });
    setup.plant(root);
    try {
      const paths = createPathResolver({ root, allowOutside: () => false });
      const bounded = createSearchOps({
        paths,
        dataDir: join(root, '.svc'),
        timeLimitMs: 1_000,
        fifoCheckMs: 0,
      });
      const timed = await watched(
        bounded.grep({ pattern: 'needle', output_mode: 'files' }, { tool: 'grep' }),
      );
      expect(timed.outcome).toMatchObject({
        truncated: true,
        note: expect.stringMatching(/^stopped after 1 s: /),
      });
      expect(timed.pids.filter((pid) => !gone(pid))).toEqual([]);

      const closing = new AbortController();
      const open = createSearchOps({
        paths,
        dataDir: join(root, '.svc'),
        timeLimitMs: 600_000,
        fifoCheckMs: 0,
        closed: closing.signal,
      });
      const running = watched(open.files({ limit: 100 }, { tool: 'workspace_snapshot' }));
      for (let i = 0; i < 200 && runningRg().length === 0; i++) await sleep(20);
      closing.abort();
      const { outcome, pids } = await running;
      expect(outcome).toMatchObject({ code: 'cancelled' });
      expect(pids.length).toBeGreaterThan(0);
      expect(pids.filter((pid) => !gone(pid))).toEqual([]);
    } finally {
      rmSync(join(root, 'sub', '.gitignore'), { force: true });
    }
  }, 30_000);

  /**
   * Starts rg-exit-child.ts on `root` (`mode`), returns its ripgreps' pids once it has ended
   * (`killed`: the process hosting them, when it was SIGKILLed).
   */
  async function childRg(
    root: string,
    mode: 'exit' | 'stay',
  ): Promise<{ code: number | null; pids: number[]; killed?: number }> {
    const unrun = resolve(__dirname, '../../node_modules/.bin/unrun');
    const child = spawn(unrun, [join(__dirname, 'rg-exit-child.ts'), root, mode], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let killed: number | undefined;
    child.stdout.on('data', (d) => {
      stdout += d;
      // Staying: the process hosting runRg is SIGKILLed once it has named its ripgrep, so no
      // exit handler of its runs.
      if (mode === 'stay' && stdout.endsWith('\n') && killed === undefined) {
        killed = Number(stdout.split(';')[0]);
        process.kill(killed, 'SIGKILL');
      }
    });
    const exited = new Promise<number | null>((done) => child.on('close', done));
    const timer = setTimeout(() => child.kill('SIGKILL'), 20_000);
    const code = await exited;
    clearTimeout(timer);
    const pids = stdout.trim().split(';').pop() ?? '';
    return { code, pids: pids.split(',').filter(Boolean).map(Number), killed };
  }

  it('no ripgrep outlives the process that started it', async () => {
    const setup = fifoWorkspace();
    const root = tmpWorkspace({ files: setup.files });
    setup.plant(root);
    try {
      const { code, pids } = await childRg(root, 'exit');
      expect(code).toBe(0);
      expect(pids.length).toBeGreaterThan(0);
      // Killed at the exit and reaped by init: gone within a bounded wait.
      for (let i = 0; i < 500 && pids.some((pid) => !gone(pid)); i++) await sleep(20);
      expect(pids.filter((pid) => !gone(pid))).toEqual([]);
    } finally {
      rmSync(join(root, 'sub', '.gitignore'), { force: true });
    }
  }, 30_000);

  it('no ripgrep outlives a SIGKILLed svc either: it dies with its parent (setpriv --pdeathsig)', async () => {
    const setup = fifoWorkspace();
    const root = tmpWorkspace({ files: setup.files });
    setup.plant(root);
    let pids: number[] = [];
    try {
      const ended = await childRg(root, 'stay');
      pids = ended.pids;
      expect(ended.killed).toBeGreaterThan(0);
      expect(pids.length).toBeGreaterThan(0);
      // The kernel sends SIGKILL when its parent dies: gone within a bounded wait.
      for (let i = 0; i < 500 && pids.some((pid) => !gone(pid)); i++) await sleep(20);
      expect(pids.filter((pid) => !gone(pid))).toEqual([]);
    } finally {
      // One left behind (the check failed) is this test's own: stopped, so the FIFO can go.
      for (const pid of pids.filter((p) => !gone(p))) {
        try {
          process.kill(pid, 'SIGKILL');
        } catch {
          // already gone
        }
      }
      rmSync(join(root, 'sub', '.gitignore'), { force: true });
    }
  }, 30_000);
});
