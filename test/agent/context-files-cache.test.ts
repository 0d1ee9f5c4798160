import { mkdirSync, mkdtempSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { findContextFiles } from '../../src/agent/environment';

const NAMES = ['AGENTS.md', 'CLAUDE.md', 'svc.md'];
/**
 * A run's ask, in a later turn of the event loop than the last (as each run's is): the asks of one
 * turn share its check (COMPAT-PERF-440).
 */
async function nextRun(workspace: string) {
  await new Promise<void>((resolve) => setImmediate(resolve));
  return findContextFiles(workspace, NAMES);
}
let base: string;
let repo: string;
let workspace: string;

/** Everything made an hour old: stamps older than the racy window are trusted. */
function age(...paths: string[]) {
  const past = new Date(Date.now() - 3_600_000);
  for (const p of paths) utimesSync(p, past, past);
}

beforeEach(() => {
  base = mkdtempSync(join(tmpdir(), 'svc-ctx-'));
  repo = join(base, 'repo');
  workspace = join(repo, 'pkg');
  mkdirSync(join(repo, '.git'), { recursive: true });
  mkdirSync(workspace);
  writeFileSync(join(repo, 'AGENTS.md'), 'root rules v1');
  age(join(repo, 'AGENTS.md'), workspace, repo);
});
afterEach(() => rmSync(base, { recursive: true, force: true }));

describe('context files across runs', () => {
  it('ENGINE-SIDE-1: an unchanged tree answers from the last read (no file read again)', () => {
    const first = findContextFiles(workspace, NAMES);
    const second = findContextFiles(workspace, NAMES);
    expect(second.map((f) => f.content)).toEqual(['root rules v1']);
    // The same file objects: the content was not read again.
    expect(second[0]).toBe(first[0]);
  });

  it('ENGINE-SIDE-2: an edited context file (same size) is seen by the next run', async () => {
    expect((await nextRun(workspace))[0].content).toBe('root rules v1');
    await nextRun(workspace);
    writeFileSync(join(repo, 'AGENTS.md'), 'root rules v2');
    expect((await nextRun(workspace))[0].content).toBe('root rules v2');
  });

  it('ENGINE-SIDE-3: a context file added, removed, or a nearer .git is seen by the next run', async () => {
    await nextRun(workspace);
    writeFileSync(join(workspace, 'svc.md'), 'pkg rules');
    expect((await nextRun(workspace)).map((f) => f.path)).toEqual(['../AGENTS.md', 'svc.md']);
    age(join(workspace, 'svc.md'), workspace);
    await nextRun(workspace);
    rmSync(join(repo, 'AGENTS.md'));
    expect((await nextRun(workspace)).map((f) => f.path)).toEqual(['svc.md']);
    writeFileSync(join(repo, 'AGENTS.md'), 'back');
    age(join(repo, 'AGENTS.md'), repo);
    expect((await nextRun(workspace)).map((f) => f.path)).toEqual(['../AGENTS.md', 'svc.md']);
    // A repository at the workspace itself: the parent's AGENTS.md is no longer searched.
    mkdirSync(join(workspace, '.git'));
    expect((await nextRun(workspace)).map((f) => f.path)).toEqual(['svc.md']);
  });

  it('ENGINE-SIDE-4: a file written within the racy window is read again even with the same stat', async () => {
    writeFileSync(join(repo, 'CLAUDE.md'), 'fresh');
    const first = await nextRun(workspace);
    const second = await nextRun(workspace);
    expect(second.map((f) => f.content)).toEqual(['root rules v1', 'fresh']);
    expect(second[1]).not.toBe(first[1]);
  });
});

describe('context files outside a repository', () => {
  it('ENGINE-SIDE-7: a .git appearing above a workspace outside any repository is seen by the next run', async () => {
    const outside = mkdtempSync(join(tmpdir(), 'svc-ctx-out-'));
    try {
      const ws = join(outside, 'a', 'ws');
      mkdirSync(ws, { recursive: true });
      writeFileSync(join(outside, 'AGENTS.md'), 'outer');
      writeFileSync(join(ws, 'AGENTS.md'), 'inner');
      age(join(ws, 'AGENTS.md'), ws);
      const first = await nextRun(ws);
      expect(first.map((f) => f.content)).toEqual(['inner']);
      expect((await nextRun(ws))[0]).toBe(first[0]);
      // The parent `a` was never stamped (its mtime moves with every entry): its `.git` is checked.
      mkdirSync(join(outside, 'a', '.git'));
      expect((await nextRun(ws)).map((f) => f.path)).toEqual(['AGENTS.md']);
      mkdirSync(join(outside, '.git'));
      rmSync(join(outside, 'a', '.git'), { recursive: true });
      expect((await nextRun(ws)).map((f) => f.path)).toEqual(['../../AGENTS.md', 'AGENTS.md']);
    } finally {
      rmSync(outside, { recursive: true, force: true });
    }
  });
});
