/**
 * A FIFO where git opens a file no check before the call covers (a subdirectory's `.gitignore`)
 * stops no checkpoint or readout for long (src/workspace/fifo-wait.ts, git.ts; found by probing:
 * the checkpoint waited out git's whole 10-minute timeout). On Linux a git waiting to open a FIFO
 * is seen and stopped with a message naming it; elsewhere the call's timeout stops it, a short
 * one for the readouts.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { gitSummary } from '../../src/agent/environment';
import { readGitState } from '../../src/observe/git-state';
import { createGitRunner, gitVerb } from '../../src/workspace/git';
import { toolHarness } from '../tools/harness';
import { commitOne } from './git-setup';

describe('svc git: a FIFO where git opens a file stops no checkpoint or readout', () => {
  it.runIf(process.platform === 'linux')(
    'a FIFO as a subdirectory .gitignore: the checkpoint is refused promptly, naming it, and the readouts answer',
    async () => {
      const h = await toolHarness({ git: true });
      const ws = h.app.workspace;
      try {
        commitOne(ws);
        mkdirSync(join(ws, 'sub'));
        writeFileSync(join(ws, 'sub', 'b.txt'), 'two\n');
        execFileSync('mkfifo', [join(ws, 'sub', '.gitignore')]);
        await expect(h.call('checkpoint_create', { name: 'fifo' })).rejects.toThrow(
          /git add was stopped: it was waiting to open a FIFO/,
        );
        // The readouts' git state (the file walker beside it is not git's).
        const state = await readGitState(h.app);
        expect(state).toMatchObject({
          is_repo: true,
          reason: expect.stringMatching(/waiting to open a FIFO/),
        });
        expect(await gitSummary(ws, undefined, { fresh: true })).toBeUndefined();

        // Where /proc shows no such wait, the call's own timeout stops git (the readouts' is short).
        const bounded = createGitRunner(ws, h.app.env, { timeoutMs: 1500, fifoCheckMs: 0 });
        await expect(bounded.run(['status', '--porcelain'])).rejects.toThrow(
          /git status did not finish within 1.5 s and was stopped; check the repository for a file git cannot read/,
        );
      } finally {
        rmSync(join(ws, 'sub', '.gitignore'), { force: true });
        await h.app.close();
      }
    },
    30_000,
  );
});

describe('svc git: messages name the git command', () => {
  it('past the -c options and paths before it', () => {
    expect(gitVerb(['-c', 'user.name=svc', '-c', 'user.email=svc@local', 'commit', '-m', 'x'])).toBe(
      'commit',
    );
    expect(gitVerb(['-C', '/w', '--no-pager', 'status', '--porcelain'])).toBe('status');
    expect(gitVerb(['log'])).toBe('log');
  });
});
