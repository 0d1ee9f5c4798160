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
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { gitSummary } from '../../src/agent/environment';
import { createGitRunner } from '../../src/workspace/git';
import { toolHarness } from '../tools/harness';

const git = (cwd: string, ...args: string[]) =>
  execFileSync('git', args, { cwd, stdio: 'pipe', encoding: 'utf8' });

describe('svc git: no transport, the workspace repository only', () => {
  it('a promisor remote uploadpack never runs: the git summary, a checkpoint and a snapshot start no fetch', async () => {
    const markers = mkdtempSync(join(tmpdir(), 'svc-git-promisor-'));
    const h = await toolHarness({ git: true });
    try {
      const ws = h.app.workspace;
      writeFileSync(join(ws, 'a.txt'), 'one\n');
      git(ws, 'add', '-A');
      git(ws, 'commit', '-q', '-m', 'one');
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
});
