/**
 * svc's own git calls run no command a repository's config names (src/workspace/git-guard.ts).
 * A command the agent runs may write `.git/config` (the sandbox lets it: it is the workspace),
 * and svc runs git outside the sandbox, with its own environment: `core.fsmonitor` ran on the next
 * run's git summary or `workspace_snapshot`, outside the sandbox and with svc's provider keys
 * (found by probing, stop 79). Pins, with every hook a repository can name writing a marker file
 * outside the workspace: the run's git summary, the repo readouts, a checkpoint and its diff, and
 * the resume summary run none of them and still answer what git says; drivers an included config
 * file defines are switched off too; a driver name git's command line cannot carry stops svc's git
 * with a clear refusal; and git gets no secret from svc's environment.
 */
import { execFileSync } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { gitSummary } from '../../src/agent/environment';
import { createGitRunner } from '../../src/workspace/git';
import { toolHarness } from '../tools/harness';

/** A repository whose config runs a command for every hook git has, each leaving a marker. */
function hostileRepo(workspace: string, markers: string, options: { include?: boolean } = {}) {
  const git = (...args: string[]) => execFileSync('git', args, { cwd: workspace, stdio: 'pipe' });
  const mark = (what: string) => `env > ${join(markers, what)}; `;
  writeFileSync(join(workspace, '.gitattributes'), '*.txt filter=evil diff=evil merge=evil\n');
  writeFileSync(join(workspace, 'a.txt'), 'one\n');
  git('add', '-A');
  git('commit', '-q', '-m', 'attributes');
  git('config', 'core.fsmonitor', `${mark('fsmonitor')}false`);
  const hooks = join(workspace, '.git', 'hooks');
  for (const hook of ['post-checkout', 'pre-commit', 'post-commit', 'post-index-change', 'pre-auto-gc']) {
    writeFileSync(join(hooks, hook), `#!/bin/sh\n${mark(hook)}exit 0\n`);
    chmodSync(join(hooks, hook), 0o755);
  }
  const drivers = [
    ['filter.evil.clean', `${mark('clean')}cat`],
    ['filter.evil.smudge', `${mark('smudge')}cat`],
    ['filter.evil.required', 'true'],
    ['diff.evil.textconv', `sh -c '${mark('textconv')}cat "$0"'`],
    ['diff.evil.command', `sh -c '${mark('diffcommand')}true'`],
    ['merge.evil.driver', `sh -c '${mark('merge')}true'`],
    ['diff.external', `sh -c '${mark('external')}true'`],
    ['commit.gpgSign', 'true'],
    ['gpg.program', `sh -c '${mark('gpg')}false'`],
  ];
  if (options.include) {
    const extra = join(workspace, 'extra.cfg');
    writeFileSync(
      extra,
      drivers
        .map(
          ([key, value]) =>
            `[${key.split('.')[0]} "${key.split('.')[1]}"]\n\t${key.split('.')[2]} = ${JSON.stringify(value)}\n`,
        )
        .join(''),
    );
    git('config', 'include.path', '../extra.cfg');
  } else for (const [key, value] of drivers) git('config', key, value);
  // A change for status, add and diff to see.
  writeFileSync(join(workspace, 'a.txt'), 'one\ntwo\n');
}

describe('svc runs no command a repository config names', () => {
  for (const include of [false, true]) {
    it(`the git summary, readouts and checkpoints run no fsmonitor, hook or driver${include ? ' (drivers in an included file)' : ''}`, async () => {
      const markers = mkdtempSync(join(tmpdir(), 'svc-git-markers-'));
      const h = await toolHarness({
        git: true,
        env: { ...process.env, OPENAI_API_KEY: 'sk-should-never-reach-git-4242' } as Record<string, string>,
      });
      try {
        hostileRepo(h.app.workspace, markers, { include });
        const summary = await gitSummary(h.app.workspace, undefined, { fresh: true });
        expect(summary?.status).toContain(' M a.txt');
        const snapshot = (await h.call('workspace_snapshot', {})) as { git: { dirty: boolean } };
        expect(snapshot.git.dirty).toBe(true);
        await h.call('get_repo_preflight_status', {});
        const checkpoint = (await h.call('checkpoint_create', { name: 'before' })) as { id: string };
        writeFileSync(join(h.app.workspace, 'a.txt'), 'one\ntwo\nthree\n');
        expect(await h.call('checkpoint_get', { id: checkpoint.id })).toMatchObject({
          changed_since: [expect.objectContaining({ path: 'a.txt' })],
        });
        await h.call('checkpoint_restore', { id: checkpoint.id });
        expect(readFileSync(join(h.app.workspace, 'a.txt'), 'utf8')).toBe('one\ntwo\n');
        const runner = createGitRunner(h.app.workspace, h.app.env);
        expect((await runner.run(['status', '--porcelain'])).stdout).toContain(' M a.txt');
        expect((await runner.run(['diff', '--stat'])).stdout).toContain('a.txt');
        expect(readdirSync(markers)).toEqual([]);
        // Unguarded, the same repository runs them (the test's hooks are real).
        execFileSync('git', ['status'], { cwd: h.app.workspace, stdio: 'pipe' });
        expect(readdirSync(markers)).toContain('fsmonitor');
      } finally {
        await h.app.close();
      }
    }, 180_000); // every git command of the summary, readouts and checkpoints: 12–36 s on a loaded CI box
  }

  it('a driver name the command line cannot carry stops svc git with a clear refusal', async () => {
    const h = await toolHarness({ git: true });
    try {
      const config = join(h.app.workspace, '.git', 'config');
      writeFileSync(config, `${execFileSync('cat', [config])}[filter "a=b"]\n\tclean = touch /tmp/never\n`);
      const runner = createGitRunner(h.app.workspace, h.app.env);
      await expect(runner.run(['status'])).rejects.toThrow(
        /the repository's config defines a filter driver "a=b", a name svc cannot switch off on git's command line/,
      );
      expect(await gitSummary(h.app.workspace, undefined, { fresh: true })).toBeUndefined();
    } finally {
      await h.app.close();
    }
  });

  it('git gets no secret from svc environment', async () => {
    const markers = mkdtempSync(join(tmpdir(), 'svc-git-env-'));
    const h = await toolHarness({
      git: true,
      env: { ...process.env, OPENAI_API_KEY: 'sk-should-never-reach-git-4242' } as Record<string, string>,
    });
    try {
      // git runs an alias through the shell with its own environment: a window on what git gets.
      const runner = createGitRunner(h.app.workspace, h.app.env);
      await runner.run(['-c', `alias.dump=!env > ${join(markers, 'env')}`, 'dump']);
      const env = execFileSync('cat', [join(markers, 'env')]).toString();
      expect(env).toContain('PATH=');
      expect(env).not.toContain('sk-should-never-reach-git');
      expect(existsSync(join(markers, 'env'))).toBe(true);
    } finally {
      await h.app.close();
    }
  });

  // Configs a parser of svc's own misread and git reads (found by a review of the first guard):
  // each names a filter for `a.txt` that writes the marker. svc asks git itself for the drivers.
  const configs: [string, (marker: string) => { config?: string; included?: string; attributes: string }][] =
    [
      [
        'two headers on one line',
        (m) => ({ config: `[user] [filter "e1"]\n\tclean = ${m}\n`, attributes: '* filter=e1\n' }),
      ],
      [
        'a lone CR between headers',
        (m) => ({ config: `[user]\r[filter "e2"]\n\tclean = ${m}\n`, attributes: '* filter=e2\n' }),
      ],
      [
        'an include path with a comment',
        (m) => ({
          config: '[include]\n\tpath = evil.inc ; comment\n',
          included: `[filter "e3"]\n\tclean = ${m}\n`,
          attributes: '* filter=e3\n',
        }),
      ],
      [
        'an include on its header line',
        (m) => ({
          config: '[include] path = evil.inc\n',
          included: `[filter "e4"]\n\tclean = ${m}\n`,
          attributes: '* filter=e4\n',
        }),
      ],
      [
        'a continued include path',
        (m) => ({
          config: '[include]\n\tpath = ev\\\nil.inc\n',
          included: `[filter "e5"]\n\tclean = ${m}\n`,
          attributes: '* filter=e5\n',
        }),
      ],
      [
        'a dotted section name',
        (m) => ({ config: `[filter.e6 "n"]\n\tclean = ${m}\n`, attributes: '* filter=e6.n\n' }),
      ],
    ];
  for (const [what, make] of configs) {
    it(`a driver git reads however it is written: ${what}`, async () => {
      const markers = mkdtempSync(join(tmpdir(), 'svc-git-markers-'));
      const h = await toolHarness({ git: true, files: { 'a.txt': 'one\n' } });
      try {
        const ws = h.app.workspace;
        const { config, included, attributes } = make(`"sh -c 'touch ${join(markers, 'ran')}; cat'"`);
        writeFileSync(join(ws, '.gitattributes'), attributes);
        if (included) writeFileSync(join(ws, '.git', 'evil.inc'), included);
        writeFileSync(
          join(ws, '.git', 'config'),
          `${readFileSync(join(ws, '.git', 'config'), 'utf8')}${config}`,
        );
        writeFileSync(join(ws, 'a.txt'), 'one\ntwo\n');
        const runner = createGitRunner(ws, h.app.env);
        expect((await runner.run(['status', '--porcelain'])).stdout).toContain('a.txt');
        expect((await gitSummary(ws, undefined, { fresh: true }))?.status.join('\n')).toContain('a.txt');
        await h.call('checkpoint_create', { name: 'x' });
        expect(readdirSync(markers)).toEqual([]);
        // Unguarded, git runs it (the case is real).
        execFileSync('git', ['hash-object', 'a.txt'], { cwd: ws, stdio: 'pipe' });
        expect(readdirSync(markers)).toEqual(['ran']);
      } finally {
        await h.app.close();
      }
    });
  }

  it('log shows no signature: a forged signed commit and gpg.program run nothing in the git summary', async () => {
    const markers = mkdtempSync(join(tmpdir(), 'svc-git-markers-'));
    const h = await toolHarness({ git: true, files: { 'a.txt': 'one\n' } });
    try {
      const ws = h.app.workspace;
      const git = (...args: string[]) => execFileSync('git', args, { cwd: ws, encoding: 'utf8' });
      const commit = git('cat-file', 'commit', 'HEAD').replace(
        /^(committer .*)$/m,
        '$1\ngpgsig -----BEGIN PGP SIGNATURE-----\n \n iQEzBAABCAAdFiEE\n -----END PGP SIGNATURE-----',
      );
      const forged = execFileSync('git', ['hash-object', '-t', 'commit', '-w', '--stdin'], {
        cwd: ws,
        input: commit,
      })
        .toString()
        .trim();
      git('update-ref', 'HEAD', forged);
      git('config', 'log.showSignature', 'true');
      git('config', 'gpg.program', `${join(markers, 'gpg.sh')}`);
      writeFileSync(join(markers, 'gpg.sh'), `#!/bin/sh\ntouch ${join(markers, 'ran')}\nexit 1\n`);
      chmodSync(join(markers, 'gpg.sh'), 0o755);
      expect((await gitSummary(ws, undefined, { fresh: true }))?.recent_commits).toHaveLength(1);
      expect(readdirSync(markers)).toEqual(['gpg.sh']);
      git('log', '-1');
      expect(readdirSync(markers).sort()).toEqual(['gpg.sh', 'ran']);
    } finally {
      await h.app.close();
    }
  });
});
