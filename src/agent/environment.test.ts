/**
 * The git summary the model is told (issue 17: two git processes at once instead of four in a
 * row): the branch from `status -b` in every state a repository can be in, the root above a
 * subdirectory, and no summary where git cannot read the repository.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { branchOf, gitSummary } from './environment';

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});
const repo = () => {
  const dir = mkdtempSync(join(tmpdir(), 'svc-gitsum-'));
  dirs.push(dir);
  const git = (...args: string[]) =>
    execFileSync('git', ['-c', 'user.email=t@e', '-c', 'user.name=t', ...args], {
      cwd: dir,
      encoding: 'utf8',
    });
  git('init', '-q', '-b', 'trunk');
  return { dir, git };
};

describe('git summary', () => {
  it('branchOf reads every form of the status header', () => {
    expect(branchOf('## main')).toBe('main');
    expect(branchOf('## main...origin/main [ahead 1, behind 2]')).toBe('main');
    expect(branchOf('## feature/x...origin/feature/x')).toBe('feature/x');
    expect(branchOf('## No commits yet on trunk')).toBe('trunk');
    expect(branchOf('## Initial commit on trunk')).toBe('trunk');
    expect(branchOf('## HEAD (no branch)')).toBeNull();
  });

  it('an unborn branch, then commits, changes and a detached HEAD, from a subdirectory', async () => {
    const { dir, git } = repo();
    mkdirSync(join(dir, 'sub'));
    const unborn = await gitSummary(join(dir, 'sub'));
    expect(unborn).toMatchObject({ root: dir, branch: 'trunk', status: [], changed: 0, recent_commits: [] });

    writeFileSync(join(dir, 'a.txt'), 'a\n');
    git('add', '.');
    git('commit', '-qm', 'first');
    writeFileSync(join(dir, 'a.txt'), 'b\n');
    writeFileSync(join(dir, 'new.txt'), 'n\n');
    await new Promise((r) => setTimeout(r, 1100)); // past the summary's 1 s reuse
    const changed = await gitSummary(dir);
    expect(changed).toMatchObject({ root: dir, branch: 'trunk', changed: 2 });
    expect(changed?.status).toEqual([' M a.txt', '?? new.txt']);
    expect(changed?.recent_commits).toHaveLength(1);
    expect(changed?.recent_commits[0]).toMatch(/^[0-9a-f]+ first$/);

    git('checkout', '-q', '--detach');
    await new Promise((r) => setTimeout(r, 1100));
    expect((await gitSummary(dir))?.branch).toBeNull();
  });

  it('no summary outside a repository, or where .git is not one git can read', async () => {
    const plain = mkdtempSync(join(tmpdir(), 'svc-gitsum-'));
    dirs.push(plain);
    expect(await gitSummary(plain)).toBeUndefined();
    writeFileSync(join(plain, '.git'), 'gitdir: /nonexistent\n');
    await new Promise((r) => setTimeout(r, 1100));
    expect(await gitSummary(plain)).toBeUndefined();
  });
});
