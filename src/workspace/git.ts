/**
 * Git plumbing for checkpoints. Snapshots are built in a temporary index (a copy of the user's,
 * so unchanged files are not re-hashed), so the user's index, HEAD and branch are never touched.
 * @module
 */
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { copyFileSync, existsSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative, sep } from 'node:path';
import { SvcError } from '../errors';
import { guardEnv, guardedArgs, UnguardableGitConfig } from './git-guard';

export interface GitResult {
  stdout: string;
  stderr: string;
  code: number;
}

export interface GitRunner {
  readonly cwd: string;
  run(
    args: string[],
    options?: { env?: Record<string, string>; input?: string; allowFail?: boolean },
  ): Promise<GitResult>;
}

export interface RepoInfo {
  top: string;
  gitDir: string;
  head: string | null;
  branch: string | null;
}

export function createGitRunner(
  cwd: string,
  baseEnv: Readonly<Record<string, string | undefined>>,
): GitRunner {
  return {
    cwd,
    async run(args, options = {}) {
      const env: Record<string, string> = {
        ...guardEnv(baseEnv, cwd),
        GIT_TERMINAL_PROMPT: '0',
        GIT_OPTIONAL_LOCKS: '0',
        LC_ALL: 'C',
        ...options.env,
      };
      // The repository's own config never runs a command here (git-guard.ts).
      let argv: string[];
      try {
        argv = await guardedArgs(cwd, args, env);
      } catch (error) {
        if (error instanceof UnguardableGitConfig)
          throw new SvcError('conflict', error.message, { details: { reason: 'unguardable_git_config' } });
        throw error;
      }
      return new Promise((resolve, reject) => {
        const child = execFile(
          'git',
          argv,
          {
            cwd,
            env,
            maxBuffer: 256 * 1024 * 1024,
            encoding: 'utf8',
          },
          (error, stdout, stderr) => {
            const code = error ? (typeof error.code === 'number' ? error.code : 1) : 0;
            if (error && (error as NodeJS.ErrnoException).code === 'ENOENT') {
              reject(
                new SvcError('unavailable', 'git is not installed or not on PATH; checkpoints need git'),
              );
              return;
            }
            if (code !== 0 && !options.allowFail) {
              reject(
                new SvcError(
                  'internal',
                  `git ${args[0]} failed: ${stderr.trim() || stdout.trim() || `exit ${code}`}`,
                  {
                    details: { args, code },
                  },
                ),
              );
              return;
            }
            resolve({ stdout, stderr, code });
          },
        );
        if (options.input !== undefined) child.stdin?.end(options.input);
        else child.stdin?.end();
      });
    },
  };
}

/** The repository around the workspace, or a clear error when there is none. */
export async function repoInfo(git: GitRunner): Promise<RepoInfo> {
  const probe = await git.run(['rev-parse', '--show-toplevel', '--absolute-git-dir'], { allowFail: true });
  if (probe.code !== 0) {
    throw new SvcError(
      'conflict',
      `checkpoints need a git repository, and ${git.cwd} is not inside one; run \`git init\` there first`,
      { details: { reason: 'not_a_git_repository', workspace: git.cwd } },
    );
  }
  const [top, gitDir] = probe.stdout.trim().split('\n');
  const head = (
    await git.run(['rev-parse', '--verify', '-q', 'HEAD^{commit}'], { allowFail: true })
  ).stdout.trim();
  const branch = (
    await git.run(['symbolic-ref', '--short', '-q', 'HEAD'], { allowFail: true })
  ).stdout.trim();
  return { top, gitDir, head: head || null, branch: branch || null };
}

/**
 * Write a tree object of the workspace as it is on disk (tracked and untracked files, ignored
 * ones excluded) without touching the user's index. `exclude` paths are workspace-relative.
 */
export async function snapshotTree(git: GitRunner, repo: RepoInfo, exclude: string[]): Promise<string> {
  const index = join(tmpdir(), `svc-index-${randomBytes(8).toString('hex')}`);
  const env = { GIT_INDEX_FILE: index };
  try {
    const userIndex = join(repo.gitDir, 'index');
    if (existsSync(userIndex)) copyFileSync(userIndex, index);
    else if (repo.head) await git.run(['read-tree', repo.head], { env });
    // An exclude that .gitignore already ignores (the usual `.svc/`) must not be named: git
    // refuses a pathspec that matches an ignored path ("paths are ignored by one of your .gitignore").
    const ignored = exclude.length
      ? new Set(
          (await git.run(['check-ignore', '--', ...exclude], { allowFail: true })).stdout
            .split('\n')
            .filter(Boolean),
        )
      : new Set<string>();
    const pathspec = ['.', ...exclude.filter((p) => !ignored.has(p)).map((p) => `:(exclude)${p}`)];
    await git.run(['add', '-A', '--ignore-errors', '--', ...pathspec], { env });
    return (await git.run(['write-tree'], { env })).stdout.trim();
  } finally {
    rmSync(index, { force: true });
  }
}

export interface TreeChange {
  /** Workspace-relative path. */
  path: string;
  /** A: only in `to`; D: only in `from`; M: in both, different; T: type changed. */
  status: 'A' | 'D' | 'M' | 'T';
}

/** Differences between two trees under the workspace (paths relative to it). */
export async function diffTrees(git: GitRunner, from: string, to: string): Promise<TreeChange[]> {
  const out = await git.run([
    'diff-tree',
    '-r',
    '-z',
    '--relative',
    '--no-renames',
    '--name-status',
    from,
    to,
  ]);
  const parts = out.stdout.split('\0').filter((p) => p !== '');
  const changes: TreeChange[] = [];
  for (let i = 0; i + 1 < parts.length; i += 2) {
    const status = parts[i][0] as TreeChange['status'];
    changes.push({ path: parts[i + 1], status });
  }
  return changes;
}

/** Write the given workspace-relative paths from a tree into the working tree (temporary index). */
export async function checkoutPaths(git: GitRunner, tree: string, paths: string[]): Promise<void> {
  if (paths.length === 0) return;
  const index = join(tmpdir(), `svc-index-${randomBytes(8).toString('hex')}`);
  const env = { GIT_INDEX_FILE: index };
  try {
    await git.run(['read-tree', tree], { env });
    await git.run(['checkout-index', '-f', '-z', '--stdin'], { env, input: `${paths.join('\0')}\0` });
  } finally {
    rmSync(index, { force: true });
  }
}

/** The data dir relative to the workspace when it lies inside it (excluded from snapshots). */
export function insideRel(root: string, path: string): string | undefined {
  const rel = relative(root, path);
  if (!rel || rel.startsWith('..') || rel.startsWith(sep)) return undefined;
  return rel.split(sep).join('/');
}
