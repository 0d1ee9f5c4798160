/**
 * Checkpoints on a temp git repository. Pins:
 * - TOOLS-10: the six checkpoint tools (and checkpoint_undo) are registered;
 * - create snapshots tracked and untracked files (not ignored ones, not svc's data dir) under a
 *   private ref, leaving the index, HEAD and branch exactly as they were;
 * - TOOLS-11: update renames; get lists what changed since; delete removes the ref;
 * - restore writes back changed and deleted files, removes new ones, takes a safety checkpoint,
 *   asks first, and still leaves index and HEAD alone;
 * - restore never follows a symlink in a path it planned before asking: a directory swapped for a
 *   symlink meanwhile is skipped (and named), a symlink it removes goes itself, not its target;
 * - TOOLS-12/13/14: undo hard-resets HEAD by N (default 1) and only with confirm: true;
 * - a workspace that is not a git repository gets a clear error.
 */
import { execFileSync } from 'node:child_process';
import {
  existsSync,
  lstatSync,
  mkdirSync,
  readFileSync,
  renameSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { tmpWorkspace } from '../helpers/tmp-workspace';
import { type Harness, toolHarness } from './harness';

const files = {
  '.gitignore': 'build/\n',
  'src/app.ts': 'export const version = 1;\n',
  'README.md': '# demo\n',
};

async function repo(): Promise<
  Harness & { git: (...args: string[]) => string; state: () => Record<string, string> }
> {
  const h = await toolHarness({ files, git: true });
  const git = (...args: string[]) =>
    execFileSync('git', args, { cwd: h.app.workspace, encoding: 'utf8' }).trim();
  // Everything the user's git state is made of: HEAD, branch, index entries, staged diff.
  const state = () => ({
    head: git('rev-parse', 'HEAD'),
    branch: git('symbolic-ref', 'HEAD'),
    index: git('ls-files', '-s'),
    staged: git('diff', '--cached', '--name-status'),
    commits: git('rev-list', '--count', 'HEAD'),
  });
  return Object.assign(h, { git, state });
}

const write = (h: Harness, path: string, content: string) => {
  mkdirSync(join(h.app.workspace, path, '..'), { recursive: true });
  writeFileSync(join(h.app.workspace, path), content);
};

describe('checkpoints', () => {
  it('TOOLS-10: the checkpoint tools are registered', async () => {
    const h = await toolHarness();
    const names = h.app.tools.registered().map((t) => t.name);
    for (const name of [
      'checkpoint_create',
      'checkpoint_list',
      'checkpoint_get',
      'checkpoint_update',
      'checkpoint_restore',
      'checkpoint_delete',
      'checkpoint_undo',
    ]) {
      expect(names).toContain(name);
    }
  });

  it('snapshots tracked and untracked files without touching index, HEAD or branch', async () => {
    const h = await repo();
    write(h, 'src/app.ts', 'export const version = 2;\n'); // modified, unstaged
    write(h, 'notes/todo.md', 'untracked\n');
    write(h, 'build/out.js', 'ignored\n');
    write(h, 'staged.txt', 'staged\n');
    h.git('add', 'staged.txt');
    await h.call('bash', { command: 'true' }); // svc's data dir (.svc) now has files
    const before = h.state();

    const checkpoint = await h.call('checkpoint_create', {
      name: 'before refactor',
      description: 'safe point',
    });
    expect(checkpoint).toMatchObject({
      id: 'ckpt_0001',
      name: 'before refactor',
      description: 'safe point',
      head: before.head,
      branch: 'main',
      session_id: 'ses_test',
      automatic: false,
    });
    expect(h.state()).toEqual(before);
    expect(h.git('rev-parse', 'refs/svc/checkpoints/ckpt_0001')).toBe(checkpoint.commit);
    const tree = h.git('ls-tree', '-r', '--name-only', checkpoint.commit).split('\n');
    expect(tree).toEqual(['.gitignore', 'README.md', 'notes/todo.md', 'src/app.ts', 'staged.txt']);
    expect(h.git('show', `${checkpoint.commit}:src/app.ts`)).toBe('export const version = 2;');
    expect(h.asks).toHaveLength(1); // only the bash call asked
  });

  it('TOOLS-11: lists, renames and describes checkpoints with what changed since', async () => {
    const h = await repo();
    const first = await h.call('checkpoint_create', { name: 'one' });
    const second = await h.call('checkpoint_create', {});
    expect(second.name).toMatch(/^checkpoint 2026-11-22T12:00:00/);
    const { checkpoints } = await h.call('checkpoint_list', {});
    expect(checkpoints.map((c: { id: string }) => c.id)).toEqual(['ckpt_0002', 'ckpt_0001']);

    const renamed = await h.call('checkpoint_update', { id: first.id, name: 'renamed' });
    expect(renamed).toMatchObject({ id: first.id, name: 'renamed', tree: first.tree });
    expect((await h.call('checkpoint_get', { id: first.id })).name).toBe('renamed');

    write(h, 'src/app.ts', 'changed\n');
    write(h, 'new.txt', 'new\n');
    rmSync(join(h.app.workspace, 'README.md'));
    const detail = await h.call('checkpoint_get', { id: first.id });
    expect(detail.changed_since).toEqual([
      { path: 'README.md', change: 'delete' },
      { path: 'new.txt', change: 'create' },
      { path: 'src/app.ts', change: 'modify' },
    ]);
    await expect(h.call('checkpoint_get', { id: 'ckpt_9999' })).rejects.toMatchObject({ code: 'not_found' });
    await expect(h.call('checkpoint_update', { id: first.id })).rejects.toMatchObject({
      code: 'invalid_input',
    });
  });

  it('restores the working tree, asks first, and keeps a safety checkpoint; index and HEAD stay', async () => {
    const h = await repo();
    write(h, 'untracked.txt', 'v1\n');
    const checkpoint = await h.call('checkpoint_create', { name: 'good state' });
    write(h, 'src/app.ts', 'broken\n');
    write(h, 'untracked.txt', 'v2\n');
    rmSync(join(h.app.workspace, 'README.md'));
    write(h, 'src/deep/new.ts', 'new file\n');
    write(h, 'build/keep.js', 'ignored stays\n');
    const before = h.state();

    const result = await h.call('checkpoint_restore', { id: checkpoint.id });
    expect(result).toMatchObject({
      restored: ['README.md', 'src/app.ts', 'untracked.txt'],
      deleted: ['src/deep/new.ts'],
      safety_checkpoint: 'ckpt_0002',
    });
    expect(h.read('src/app.ts')).toBe('export const version = 1;\n');
    expect(h.read('untracked.txt')).toBe('v1\n');
    expect(h.read('README.md')).toBe('# demo\n');
    expect(existsSync(join(h.app.workspace, 'src/deep'))).toBe(false);
    expect(h.read('build/keep.js')).toBe('ignored stays\n');
    expect(h.state()).toEqual(before);
    expect(h.asks.at(-1)).toMatchObject({
      tool: 'checkpoint_restore',
      title: 'restore checkpoint good state (4 files)',
      details: { restore: ['README.md', 'src/app.ts', 'untracked.txt'], delete: ['src/deep/new.ts'] },
    });
    const changed = h.busEvents.filter((e) => e.type === 'file.changed').map((e) => e.payload);
    expect(changed).toContainEqual({
      session_id: 'ses_test',
      run_id: 'run_test',
      tool: 'checkpoint_restore',
      path: 'src/deep/new.ts',
      change: 'delete',
    });
    const history = await h.app.ws.history.list({ sessionId: 'ses_test' });
    expect(history.find((c) => c.path === 'src/app.ts')).toMatchObject({
      change: 'modify',
      has_content: true,
    });

    // The safety checkpoint takes us back to the broken state.
    await h.call('checkpoint_restore', { id: 'ckpt_0002' });
    expect(h.read('src/app.ts')).toBe('broken\n');
    expect(h.read('src/deep/new.ts')).toBe('new file\n');
    // Restoring a checkpoint the workspace already matches changes nothing and asks nothing.
    const asked = h.asks.length;
    expect((await h.call('checkpoint_restore', { id: 'ckpt_0002' })).safety_checkpoint).toBeNull();
    expect(h.asks).toHaveLength(asked);
  });

  it('never removes or reads through a directory swapped for a symlink while the restore waited', async () => {
    const h = await repo();
    const victim = tmpWorkspace({ files: { g: 'victim\n' } });
    const checkpoint = await h.call('checkpoint_create', { name: 'base' });
    write(h, 'd/g', 'made after\n');
    write(h, 'new.txt', 'made after\n');
    const ws = h.app.workspace;
    // The plan (remove d/g and new.txt) is made before the approval; the swap happens during it,
    // as an agent's background command can do while the restore waits (or takes its safety checkpoint).
    const result = await h.call(
      'checkpoint_restore',
      { id: checkpoint.id },
      {
        ask: async () => {
          renameSync(join(ws, 'd'), join(ws, 'd.real'));
          symlinkSync(victim, join(ws, 'd'));
        },
      },
    );
    expect(readFileSync(join(victim, 'g'), 'utf8')).toBe('victim\n');
    expect(result).toMatchObject({
      deleted: ['new.txt'],
      skipped: [{ path: 'd/g', reason: 'a parent is a symlink' }],
    });
    expect(existsSync(join(ws, 'new.txt'))).toBe(false);
    expect(h.modelText('checkpoint_restore', result)).toContain('d/g (a parent is a symlink)');
    // Nothing read through the symlink lands in the history, and no change is announced for d/g.
    const history = await h.app.ws.history.list({ sessionId: 'ses_test' });
    expect(history.map((c) => c.path)).not.toContain('d/g');
    const changed = h.busEvents.filter((e) => e.type === 'file.changed').map((e) => e.payload.path);
    expect(changed).toEqual(['new.txt']);
  });

  it('removes a symlink made since the checkpoint itself, and records its target path, not its content', async () => {
    const h = await repo();
    const victim = tmpWorkspace({ files: { g: 'victim\n' } });
    const checkpoint = await h.call('checkpoint_create', { name: 'base' });
    symlinkSync(join(victim, 'g'), join(h.app.workspace, 'link'));
    const result = await h.call('checkpoint_restore', { id: checkpoint.id });
    expect(lstatSync(join(h.app.workspace, 'link'), { throwIfNoEntry: false })).toBeUndefined();
    expect(readFileSync(join(victim, 'g'), 'utf8')).toBe('victim\n');
    const [entry] = await h.app.ws.history.list({ sessionId: 'ses_test', path: 'link' });
    const stored = await h.app.ws.history.get(entry.id);
    expect(stored?.before).toBe(join(victim, 'g')); // what git stores for a symlink, not 'victim\n'
    expect(result).toMatchObject({ deleted: ['link'], skipped: [] });
  });

  it('changes nothing when the restore is denied', async () => {
    const h = await repo();
    const checkpoint = await h.call('checkpoint_create', {});
    write(h, 'src/app.ts', 'edited\n');
    h.denyAll();
    await expect(h.call('checkpoint_restore', { id: checkpoint.id })).rejects.toMatchObject({
      code: 'forbidden',
    });
    expect(h.read('src/app.ts')).toBe('edited\n');
    expect((await h.call('checkpoint_list', {})).checkpoints).toHaveLength(1);
  });

  it('deletes a checkpoint after asking', async () => {
    const h = await repo();
    const checkpoint = await h.call('checkpoint_create', {});
    expect(await h.call('checkpoint_delete', { id: checkpoint.id })).toEqual({ deleted: checkpoint.id });
    expect(h.asks[0]).toMatchObject({ tool: 'checkpoint_delete' });
    expect((await h.call('checkpoint_list', {})).checkpoints).toEqual([]);
    await expect(h.call('checkpoint_get', { id: checkpoint.id })).rejects.toMatchObject({
      code: 'not_found',
    });
  });

  it('answers clearly when the workspace is not a git repository', async () => {
    const h = await toolHarness({ files });
    for (const [tool, input] of [
      ['checkpoint_create', {}],
      ['checkpoint_list', {}],
      ['checkpoint_restore', { id: 'ckpt_0001' }],
      ['checkpoint_undo', { confirm: true }],
    ] as const) {
      await expect(h.call(tool, input), tool).rejects.toMatchObject({
        code: 'conflict',
        message: expect.stringContaining('checkpoints need a git repository'),
      });
    }
  });
});

describe('checkpoint_undo', () => {
  async function withCommits(n: number) {
    const h = await repo();
    const heads = [h.git('rev-parse', 'HEAD')];
    for (let i = 1; i <= n; i++) {
      write(h, 'src/app.ts', `export const version = ${i + 1};\n`);
      h.git('commit', '-qam', `bump ${i}`);
      heads.push(h.git('rev-parse', 'HEAD'));
    }
    return { h, heads };
  }

  it('TOOLS-12: rewinds HEAD by N with a hard reset of the working tree', async () => {
    const { h, heads } = await withCommits(3);
    write(h, 'src/app.ts', 'uncommitted\n');
    const result = await h.call('checkpoint_undo', { n: 2, confirm: true });
    expect(result).toMatchObject({
      head_before: heads[3],
      head_after: heads[1],
      undone: [
        { commit: heads[3], subject: 'bump 3' },
        { commit: heads[2], subject: 'bump 2' },
      ],
      safety_checkpoint: 'ckpt_0001',
    });
    expect(h.git('rev-parse', 'HEAD')).toBe(heads[1]);
    expect(h.git('symbolic-ref', 'HEAD')).toBe('refs/heads/main');
    expect(h.read('src/app.ts')).toBe('export const version = 2;\n');
    expect(h.git('status', '--porcelain', '--untracked-files=no')).toBe('');
    expect(h.asks[0]).toMatchObject({
      tool: 'checkpoint_undo',
      title: 'checkpoint_undo: git reset --hard HEAD~2',
      details: { n: 2, head: heads[3], target: heads[1] },
    });
    // The safety checkpoint kept the uncommitted work.
    await h.call('checkpoint_restore', { id: result.safety_checkpoint });
    expect(h.read('src/app.ts')).toBe('uncommitted\n');
  });

  it('TOOLS-13: N defaults to 1', async () => {
    const { h, heads } = await withCommits(2);
    const result = await h.call('checkpoint_undo', { confirm: true });
    expect(result.undone).toHaveLength(1);
    expect(h.git('rev-parse', 'HEAD')).toBe(heads[1]);
  });

  it('TOOLS-14: refuses without confirm: true and leaves HEAD alone', async () => {
    const { h, heads } = await withCommits(1);
    await expect(h.call('checkpoint_undo', {})).rejects.toMatchObject({
      code: 'invalid_input',
      message: expect.stringContaining('call it again with confirm: true'),
    });
    await expect(h.call('checkpoint_undo', { n: 1, confirm: false })).rejects.toMatchObject({
      code: 'invalid_input',
    });
    expect(h.git('rev-parse', 'HEAD')).toBe(heads[1]);
    expect(h.asks).toEqual([]);
  });

  it('refuses to undo more commits than exist, and keeps HEAD when denied', async () => {
    const { h, heads } = await withCommits(1);
    await expect(h.call('checkpoint_undo', { n: 2, confirm: true })).rejects.toThrow(
      'n: HEAD has 2 commits; at most 1 can be undone (the first commit stays)',
    );
    h.denyAll();
    await expect(h.call('checkpoint_undo', { confirm: true })).rejects.toMatchObject({ code: 'forbidden' });
    expect(h.git('rev-parse', 'HEAD')).toBe(heads[1]);
  });
});
