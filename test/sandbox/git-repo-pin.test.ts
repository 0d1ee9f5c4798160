/**
 * svc's own git calls start no transport and work on the workspace's repository only
 * (src/workspace/git-guard.ts, stop 81, found by probing). A command the agent runs may write
 * `.git/config`, and svc runs git outside the sandbox: a promisor remote's `uploadpack` ran as
 * svc's user when git fetched a missing object lazily (the next run's git summary, a checkpoint),
 * and `core.worktree` pointed checkpoints at another directory (a checkpoint read `~/.ssh` into the
 * repository, a restore wrote files outside the workspace). Pins: neither runs or reaches outside
 * through the git summary, checkpoints or a restore, and unguarded git does what the test claims.
 */
import { execFileSync } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { gitSummary } from '../../src/agent/environment';
import { createGitRunner } from '../../src/workspace/git';
import { toolHarness } from '../tools/harness';
import { commitOne, git } from './git-setup';

describe('svc git: no transport, the workspace repository only', () => {
  it('a promisor remote uploadpack never runs: the git summary, a checkpoint and a snapshot start no fetch', async () => {
    const markers = mkdtempSync(join(tmpdir(), 'svc-git-promisor-'));
    const h = await toolHarness({ git: true });
    try {
      const ws = h.app.workspace;
      commitOne(ws);
      git(ws, 'config', 'core.repositoryformatversion', '1');
      git(ws, 'config', 'extensions.partialClone', 'origin');
      git(ws, 'config', 'remote.origin.url', './nowhere');
      git(ws, 'config', 'remote.origin.promisor', 'true');
      git(ws, 'config', 'protocol.file.allow', 'always');
      git(ws, 'config', 'remote.origin.uploadpack', `sh -c 'env > ${join(markers, 'uploadpack')}' #`);
      const branch = git(ws, 'symbolic-ref', '--short', 'HEAD').trim();
      // A commit the repository does not have: git asks the promisor remote for it.
      writeFileSync(join(ws, '.git', 'refs', 'heads', branch), `${'1'.repeat(40)}\n`);

      await gitSummary(ws, undefined, { fresh: true });
      await h.call('workspace_snapshot', {}).catch(() => undefined);
      await h.call('checkpoint_create', { name: 'x' }).catch(() => undefined);
      const runner = createGitRunner(ws, h.app.env);
      await runner.run(['cat-file', '-e', '1'.repeat(40)], { allowFail: true });
      expect(readdirSync(markers)).toEqual([]);

      // Unguarded, the same repository runs it.
      try {
        git(ws, 'cat-file', '-e', '1'.repeat(40));
      } catch {}
      expect(readdirSync(markers)).toEqual(['uploadpack']);
    } finally {
      await h.app.close();
    }
  });

  it('core.worktree cannot move a checkpoint or a restore outside the workspace', async () => {
    const outside = mkdtempSync(join(tmpdir(), 'svc-git-outside-'));
    writeFileSync(join(outside, 'secret.txt'), 'SECRET-OUTSIDE-4242\n');
    const h = await toolHarness({ git: true });
    try {
      const ws = h.app.workspace;
      writeFileSync(join(ws, 'evil.sh'), 'echo planted\n');
      git(ws, 'add', '-A');
      git(ws, 'commit', '-q', '-m', 'one');
      const planted = (await h.call('checkpoint_create', { name: 'planted' })) as { id: string };

      git(ws, 'config', 'core.worktree', outside);
      const read = (await h.call('checkpoint_create', { name: 'read' })) as { id: string };
      const refs = git(ws, '-c', 'core.worktree=', 'for-each-ref', '--format=%(objectname)');
      for (const ref of refs.split('\n').filter(Boolean)) {
        expect(git(ws, 'ls-tree', '-r', '--name-only', ref)).not.toContain('secret.txt');
      }
      expect(read.id).toBeTruthy();

      mkdirSync(join(outside, 'victim'));
      git(ws, 'config', 'core.worktree', join(outside, 'victim'));
      rmSync(join(ws, 'evil.sh'));
      await h.call('checkpoint_restore', { id: planted.id });
      expect(existsSync(join(outside, 'victim', 'evil.sh'))).toBe(false);
      expect(existsSync(join(ws, 'evil.sh'))).toBe(true);

      // Unguarded git does follow core.worktree (what the guard is for).
      expect(git(ws, 'rev-parse', '--show-toplevel').trim()).toBe(join(outside, 'victim'));
    } finally {
      await h.app.close();
    }
  });

  it('a .git file or commondir naming another repository on the machine is refused; worktrees and submodules still work', async () => {
    const victim = mkdtempSync(join(tmpdir(), 'svc-git-victim-'));
    git(victim, 'init', '-q');
    writeFileSync(join(victim, 'secret.txt'), 'TOPSECRET-victim\n');
    git(victim, 'add', '-A');
    git(victim, '-c', 'user.email=v@x', '-c', 'user.name=v', 'commit', '-q', '-m', 'v');
    const victimHead = git(victim, 'rev-parse', 'HEAD').trim();
    const h = await toolHarness({ git: true });
    try {
      const ws = h.app.workspace;
      commitOne(ws);
      renameSync(join(ws, '.git'), join(ws, '.git.old'));
      writeFileSync(join(ws, '.git'), `gitdir: ${join(victim, '.git')}\n`);
      const runner = createGitRunner(ws, h.app.env);
      await expect(runner.run(['status'])).rejects.toThrow(
        /leads to .*svc-git-victim-.*outside the workspace's repository/,
      );
      await expect(h.call('checkpoint_create', { name: 'x' })).rejects.toThrow(
        /outside the workspace's repository/,
      );
      expect(await gitSummary(ws, undefined, { fresh: true })).toBeUndefined();
      expect(git(victim, 'for-each-ref', '--format=%(refname)')).not.toContain('refs/svc');
      expect(git(victim, 'rev-parse', 'HEAD').trim()).toBe(victimHead);

      // The same through a .git directory's commondir file, and a symlinked .git.
      rmSync(join(ws, '.git'));
      renameSync(join(ws, '.git.old'), join(ws, '.git'));
      writeFileSync(join(ws, '.git', 'commondir'), `${join(victim, '.git')}\n`);
      await expect(runner.run(['status'])).rejects.toThrow(/commondir leads to/);
      rmSync(join(ws, '.git', 'commondir'));
      expect((await runner.run(['status', '--porcelain'])).code).toBe(0);

      // A linked worktree (its .git file names the main repository's worktrees/<name>) and a
      // submodule (the superproject's .git/modules/<name>) are git's own layouts.
      const linked = join(mkdtempSync(join(tmpdir(), 'svc-git-linked-')), 'wt');
      git(ws, 'worktree', 'add', '-q', linked);
      expect((await createGitRunner(linked, h.app.env).run(['status', '--porcelain'])).code).toBe(0);
      const superproject = mkdtempSync(join(tmpdir(), 'svc-git-super-'));
      git(superproject, 'init', '-q');
      git(superproject, '-c', 'protocol.file.allow=always', 'submodule', 'add', '-q', ws, 'sub');
      const sub = join(superproject, 'sub');
      expect(readFileSync(join(sub, '.git'), 'utf8')).toContain('.git/modules/sub');
      expect((await createGitRunner(sub, h.app.env).run(['status', '--porcelain'])).code).toBe(0);
    } finally {
      await h.app.close();
    }
  });

  it('a driver hidden behind megabytes of config is still switched off, and more drivers than any repository needs stop svc git', async () => {
    const markers = mkdtempSync(join(tmpdir(), 'svc-git-bigconfig-'));
    const h = await toolHarness({ git: true });
    try {
      const ws = h.app.workspace;
      const pad = 'a'.repeat(1024 * 1024);
      const config = join(ws, '.git', 'config');
      let text = readFileSync(config, 'utf8');
      for (let i = 0; i < 17; i++) text += `[filter "pad${i}"]\n\tclean = ${pad}\n`;
      text += `[filter "x"]\n\tclean = sh -c 'env > ${join(markers, 'clean')}; cat'\n`;
      writeFileSync(config, text);
      writeFileSync(join(ws, '.gitattributes'), '*.txt filter=x\n');
      writeFileSync(join(ws, 'a.txt'), 'one\n');
      await h.call('checkpoint_create', { name: 'big' });
      await gitSummary(ws, undefined, { fresh: true });
      expect(readdirSync(markers)).toEqual([]);

      let many = readFileSync(config, 'utf8');
      for (let i = 0; i < 250; i++) many += `[diff "d${i}"]\n\ttextconv = cat\n`;
      writeFileSync(config, many);
      await expect(createGitRunner(ws, h.app.env).run(['status'])).rejects.toThrow(
        /defines \d+ filter, diff and merge drivers \(more than 200\)/,
      );
    } finally {
      await h.app.close();
    }
  }, 180_000); // every git command reads the 17 MB config: 20–31 s on a loaded CI box

  it('a FIFO as the index stops neither svc nor its git: svc refuses the repository, naming the file', async () => {
    const h = await toolHarness({ git: true });
    try {
      const ws = h.app.workspace;
      commitOne(ws);
      rmSync(join(ws, '.git', 'index'));
      execFileSync('mkfifo', [join(ws, '.git', 'index')]);
      await expect(h.call('checkpoint_create', { name: 'fifo' })).rejects.toThrow(
        /\.git\/index is not a regular file; svc runs no git there/,
      );
      expect(await gitSummary(ws, undefined, { fresh: true })).toBeUndefined();
      rmSync(join(ws, '.git', 'index'));
      execFileSync('mkfifo', [join(ws, '.gitignore')]);
      await expect(h.call('checkpoint_create', { name: 'fifo' })).rejects.toThrow(
        /\.gitignore is not a regular file; svc runs no git there/,
      );
    } finally {
      rmSync(join(h.app.workspace, '.git', 'index'), { force: true });
      rmSync(join(h.app.workspace, '.gitignore'), { force: true });
      await h.app.close();
    }
  });
});
