/**
 * svc's own git reads the workspace repository's objects only, and a FIFO where git opens a file
 * is refused before git runs (src/workspace/git-guard.ts, git-guard-files.ts; found by probing).
 * A command the agent runs may write `.git`: an `objects/info/alternates` naming another
 * repository's objects made svc's git read them (a checkpoint, a diff), and a FIFO as a file the
 * repository's config names (`core.excludesFile`), `.git/shallow` or `.mailmap` held svc's git
 * until its timeout.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { gitSummary } from '../../src/agent/environment';
import { createGitRunner } from '../../src/workspace/git';
import { toolHarness } from '../tools/harness';
import { commitOne, git } from './git-setup';

/** Another repository on the machine holding a secret blob; its object id. */
function victimBlob(): { objects: string; blob: string } {
  const victim = mkdtempSync(join(tmpdir(), 'svc-git-alt-victim-'));
  git(victim, 'init', '-q');
  writeFileSync(join(victim, 'secret.txt'), 'TOPSECRET-alternate\n');
  git(victim, 'add', '-A');
  git(victim, '-c', 'user.email=v@x', '-c', 'user.name=v', 'commit', '-q', '-m', 'v');
  return {
    objects: join(victim, '.git', 'objects'),
    blob: git(victim, 'rev-parse', 'HEAD:secret.txt').trim(),
  };
}

describe("svc git: the workspace repository's objects only", () => {
  it('an alternates file naming object directories outside the workspace is refused, however it names them', async () => {
    const { objects, blob } = victimBlob();
    const h = await toolHarness({ git: true });
    try {
      const ws = h.app.workspace;
      commitOne(ws);
      const alternates = join(ws, '.git', 'objects', 'info', 'alternates');
      const runner = createGitRunner(ws, h.app.env);
      const inner = join(ws, 'inner-objects');
      mkdirSync(join(inner, 'info'), { recursive: true });
      for (const text of [
        `${objects}\n`,
        `# a comment\n\n"${objects}"\n`,
        `${relative(join(ws, '.git', 'objects'), objects)}\n`,
        `${'#'.repeat(8000)}\n${objects}\n`,
        `${inner}\n`, // inside, but its own alternates lead out
      ]) {
        writeFileSync(join(inner, 'info', 'alternates'), `${objects}\n`);
        writeFileSync(alternates, text);
        // Unguarded git reads the other repository's object.
        expect(git(ws, 'cat-file', '-p', blob)).toContain('TOPSECRET');
        await expect(runner.run(['cat-file', '-p', blob])).rejects.toThrow(
          /outside the workspace's repository; svc's git would read another repository's objects/,
        );
      }
      await expect(h.call('checkpoint_create', { name: 'x' })).rejects.toThrow(
        /another repository's objects/,
      );
      expect(await gitSummary(ws, undefined, { fresh: true })).toBeUndefined();

      // A FIFO as the alternates file would hold git in `open`.
      rmSync(alternates);
      execFileSync('mkfifo', [alternates]);
      await expect(runner.run(['status'])).rejects.toThrow(/alternates is not a regular file/);
      rmSync(alternates);

      // An alternate inside the workspace is git's own business; http-alternates git never reads
      // locally; and svc's own environment names no object directory to its git.
      rmSync(join(inner, 'info', 'alternates'));
      writeFileSync(alternates, `${inner}\n`);
      writeFileSync(join(ws, '.git', 'objects', 'info', 'http-alternates'), `${objects}\n`);
      expect((await runner.run(['status', '--porcelain'])).code).toBe(0);
      const withEnv = createGitRunner(ws, { ...h.app.env, GIT_ALTERNATE_OBJECT_DIRECTORIES: objects });
      expect((await withEnv.run(['cat-file', '-e', blob], { allowFail: true })).code).not.toBe(0);
      expect(
        execFileSync('git', ['cat-file', '-p', blob], {
          cwd: ws,
          env: { ...process.env, GIT_ALTERNATE_OBJECT_DIRECTORIES: objects },
          encoding: 'utf8',
        }),
      ).toContain('TOPSECRET');
    } finally {
      await h.app.close();
    }
  });
});

describe('svc git: a FIFO where git opens a file is refused before git runs', () => {
  it("files the repository's config names, and more of .git's files, as FIFOs are refused before git runs", async () => {
    const h = await toolHarness({ git: true });
    const ws = h.app.workspace;
    const fifos = mkdtempSync(join(tmpdir(), 'svc-git-fifo-'));
    try {
      commitOne(ws);
      const runner = createGitRunner(ws, h.app.env, { fifoCheckMs: 0 });
      for (const key of ['core.excludesFile', 'core.attributesFile', 'mailmap.file']) {
        const fifo = join(fifos, key);
        execFileSync('mkfifo', [fifo]);
        git(ws, 'config', key, fifo);
        await expect(runner.run(['log', '--oneline'])).rejects.toThrow(
          new RegExp(`sets ${key.toLowerCase().replace('.', '\\.')} to .*, which is not a regular file`),
        );
        git(ws, 'config', '--unset', key);
      }
      // A regular file there is fine.
      writeFileSync(join(fifos, 'ignore'), '*.log\n');
      git(ws, 'config', 'core.excludesFile', join(fifos, 'ignore'));
      expect((await runner.run(['status', '--porcelain'])).code).toBe(0);
      for (const name of ['.git/info/grafts', '.git/shallow', '.mailmap']) {
        execFileSync('mkfifo', [join(ws, name)]);
        await expect(runner.run(['log', '--oneline'])).rejects.toThrow(
          new RegExp(`${name.replace('.', '\\.')} is not a regular file; svc runs no git there`),
        );
        rmSync(join(ws, name));
      }
    } finally {
      await h.app.close();
    }
  }, 30_000);
});
