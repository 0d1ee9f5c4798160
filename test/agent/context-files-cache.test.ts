import { mkdirSync, mkdtempSync, rmSync, truncateSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { findContextFiles } from '../../src/agent/environment';

const NAMES = ['AGENTS.md', 'CLAUDE.md', 'svc.md'];
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

  it('ENGINE-SIDE-2: an edited context file (same size) is seen by the next run', () => {
    expect(findContextFiles(workspace, NAMES)[0].content).toBe('root rules v1');
    findContextFiles(workspace, NAMES);
    writeFileSync(join(repo, 'AGENTS.md'), 'root rules v2');
    expect(findContextFiles(workspace, NAMES)[0].content).toBe('root rules v2');
  });

  it('ENGINE-SIDE-3: a context file added, removed, or a nearer .git is seen by the next run', () => {
    findContextFiles(workspace, NAMES);
    writeFileSync(join(workspace, 'svc.md'), 'pkg rules');
    expect(findContextFiles(workspace, NAMES).map((f) => f.path)).toEqual(['../AGENTS.md', 'svc.md']);
    age(join(workspace, 'svc.md'), workspace);
    findContextFiles(workspace, NAMES);
    rmSync(join(repo, 'AGENTS.md'));
    expect(findContextFiles(workspace, NAMES).map((f) => f.path)).toEqual(['svc.md']);
    writeFileSync(join(repo, 'AGENTS.md'), 'back');
    age(join(repo, 'AGENTS.md'), repo);
    expect(findContextFiles(workspace, NAMES).map((f) => f.path)).toEqual(['../AGENTS.md', 'svc.md']);
    // A repository at the workspace itself: the parent's AGENTS.md is no longer searched.
    mkdirSync(join(workspace, '.git'));
    expect(findContextFiles(workspace, NAMES).map((f) => f.path)).toEqual(['svc.md']);
  });

  it('ENGINE-SIDE-4: a file written within the racy window is read again even with the same stat', () => {
    writeFileSync(join(repo, 'CLAUDE.md'), 'fresh');
    const first = findContextFiles(workspace, NAMES);
    const second = findContextFiles(workspace, NAMES);
    expect(second.map((f) => f.content)).toEqual(['root rules v1', 'fresh']);
    expect(second[1]).not.toBe(first[1]);
  });
});

describe('context files outside a repository', () => {
  it('ENGINE-SIDE-7: a .git appearing above a workspace outside any repository is seen by the next run', () => {
    const outside = mkdtempSync(join(tmpdir(), 'svc-ctx-out-'));
    try {
      const ws = join(outside, 'a', 'ws');
      mkdirSync(ws, { recursive: true });
      writeFileSync(join(outside, 'AGENTS.md'), 'outer');
      writeFileSync(join(ws, 'AGENTS.md'), 'inner');
      age(join(ws, 'AGENTS.md'), ws);
      const first = findContextFiles(ws, NAMES);
      expect(first.map((f) => f.content)).toEqual(['inner']);
      expect(findContextFiles(ws, NAMES)[0]).toBe(first[0]);
      // The parent `a` was never stamped (its mtime moves with every entry): its `.git` is checked.
      mkdirSync(join(outside, 'a', '.git'));
      expect(findContextFiles(ws, NAMES).map((f) => f.path)).toEqual(['AGENTS.md']);
      mkdirSync(join(outside, '.git'));
      rmSync(join(outside, 'a', '.git'), { recursive: true });
      expect(findContextFiles(ws, NAMES).map((f) => f.path)).toEqual(['../../AGENTS.md', 'AGENTS.md']);
    } finally {
      rmSync(outside, { recursive: true, force: true });
    }
  });
});

describe('context files that are too big', () => {
  it('a 3 GiB (sparse) AGENTS.md gives its first 32 KiB, read no further', () => {
    const file = join(workspace, 'AGENTS.md');
    writeFileSync(file, `# pkg rules\n${'x'.repeat(40_000)}`);
    // Past what one read of the whole file can hold (2 GiB): read whole, it was skipped.
    truncateSync(file, 3 * 1024 ** 3);
    const files = findContextFiles(workspace, NAMES);
    const pkg = files.find((f) => f.path === 'AGENTS.md');
    expect(pkg?.truncated).toBe(true);
    expect(pkg?.content.startsWith('# pkg rules\nxxx')).toBe(true);
    expect(pkg?.content.length).toBe(32 * 1024);
  });
});
