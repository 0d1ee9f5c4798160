/**
 * svc runs git outside the sandbox, and git reads an ignore or attributes file whole into memory:
 * a sparse top `.gitignore` (`truncate -s 10G .gitignore`) took svc's `git status` to hundreds of
 * MB, a 2 GB one to 2 GB (found by probing). The guard refuses one from 100 MiB (where git 2.40
 * and later skip it themselves) at the top of the work tree, in `.git/info`, and where the
 * repository's config points core.excludesFile or core.attributesFile, naming it.
 */
import { mkdtempSync, rmSync, truncateSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createGitRunner } from '../../src/workspace/git';
import { toolHarness } from '../tools/harness';
import { commitOne, git } from './git-setup';

const MiB = 1024 * 1024;

/** A sparse file of `bytes` at `path`: no disk, any size. */
function sparse(path: string, bytes: number): void {
  writeFileSync(path, '');
  truncateSync(path, bytes);
}

describe('svc git: an oversized ignore or attributes file is refused before git runs', () => {
  it('at the top, in .git/info and where the config points: refused naming it; below the limit git runs', async () => {
    const h = await toolHarness({ git: true });
    const ws = h.app.workspace;
    const outside = mkdtempSync(join(tmpdir(), 'svc-git-pattern-'));
    try {
      commitOne(ws);
      const runner = createGitRunner(ws, h.app.env, { fifoCheckMs: 0 });
      for (const name of ['.gitignore', '.gitattributes', '.git/info/exclude', '.git/info/attributes']) {
        const path = join(ws, name);
        sparse(path, 100 * MiB);
        await expect(runner.run(['status', '--porcelain']), name).rejects.toMatchObject({
          code: 'conflict',
          message: `${path} is 100 MiB, over the 100 MiB an ignore or attributes file may have (git reads it whole into memory); svc runs no git there until it is shrunk or removed`,
        });
        // Just below the limit, git runs as before.
        truncateSync(path, 100 * MiB - 1);
        expect((await runner.run(['status', '--porcelain'])).code, name).toBe(0);
        rmSync(path);
      }
      for (const key of ['core.excludesFile', 'core.attributesFile']) {
        const path = join(outside, key);
        sparse(path, 200 * MiB);
        git(ws, 'config', key, path);
        await expect(runner.run(['status', '--porcelain']), key).rejects.toThrow(
          `the repository's config sets ${key.toLowerCase()}: ${path} is 200 MiB, over the 100 MiB`,
        );
        git(ws, 'config', '--unset', key);
      }
      expect((await runner.run(['status', '--porcelain'])).code).toBe(0);
    } finally {
      rmSync(outside, { recursive: true, force: true });
      await h.app.close();
    }
  }, 60_000);
});
