/**
 * Git plumbing for checkpoints. Snapshots are built in a temporary index (a copy of the user's,
 * so unchanged files are not re-hashed), so the user's index, HEAD and branch are never touched.
 * @module
 */
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { closeSync, constants, fstatSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative, sep } from 'node:path';
import type { Config } from '../config/schema';
import { SvcError } from '../errors';
import { WRAPPER_EXEC_FAILED, wrapped } from './child-limits';
import { watchFifoWait } from './fifo-wait';
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

export interface GitRunnerOptions {
  /** The longest one call may take (GIT_TIMEOUT_MS unless given: a readout takes less). */
  timeoutMs?: number;
  /** How often a running git is looked at for a wait on a FIFO (fifo-wait.ts); 0: never. */
  fifoCheckMs?: number;
  /**
   * The most memory (data) a heavy git command may take, in bytes, on Linux (options.git.
   * memory_limit_mb; GIT_MEMORY_LIMIT_BYTES unless given; 0: no limit). Read at each call.
   */
  memoryLimitBytes?: () => number;
}

/** options.git.memory_limit_mb's default, in bytes. */
export const GIT_MEMORY_LIMIT_BYTES = 2 * 1024 * 1024 * 1024;

/**
 * The memory limit the user configured (options.git.memory_limit_mb; 0: none), read at each call
 * so a reloaded config applies. Every runner svc builds for the workspace takes it: one without
 * it runs under the default, whatever the user set.
 */
export const configuredGitLimit = (
  config: () => Pick<Config, 'options'>,
): Pick<GitRunnerOptions, 'memoryLimitBytes'> => ({
  memoryLimitBytes: () => config().options.git.memory_limit_mb * 1024 * 1024,
});

/**
 * The commands that read or write the workspace's contents, whose work grows with what a
 * repository holds (huge packs, pathological diffs): these run through child-limits.ts, dying
 * with svc and under the memory limit. The others (rev-parse, for-each-ref, update-ref, status…)
 * run plain: the wrapper's two execs cost 6–8 ms a call (a `git status` of a small repository
 * took 13 ms plain, 19–23 ms wrapped; medians of 200), on every readout and checkpoint. So do a
 * checkpoint's own (read-tree, add, write-tree, commit-tree; checkout-index restoring one): four
 * a checkpoint, ≈ 28 ms more each wrapped; their memory follows the index and the
 * files svc adds (git streams a big file), not a repository's history, and their timeout ends them.
 */
const HEAVY_GIT = new Set([
  'apply',
  'blame',
  'checkout',
  'commit',
  'diff',
  'diff-files',
  'diff-index',
  'diff-tree',
  'gc',
  'log',
  'merge',
  'repack',
  'reset',
  'restore',
  'show',
  'stash',
  'worktree',
]);

export interface RepoInfo {
  top: string;
  gitDir: string;
  head: string | null;
  branch: string | null;
}

/** The longest one of svc's git calls may take (a checkpoint of a very large tree stays well inside). */
const GIT_TIMEOUT_MS = 600_000;

export function createGitRunner(
  cwd: string,
  baseEnv: Readonly<Record<string, string | undefined>>,
  runnerOptions: GitRunnerOptions = {},
): GitRunner {
  const { timeoutMs = GIT_TIMEOUT_MS, fifoCheckMs = 500 } = runnerOptions;
  return {
    cwd,
    async run(args, options = {}) {
      // The repository's own config never runs a command here, and git works on the workspace's
      // repository only (git-guard.ts).
      let env: Record<string, string>;
      let argv: string[];
      try {
        env = {
          ...guardEnv(baseEnv, cwd),
          GIT_TERMINAL_PROMPT: '0',
          GIT_OPTIONAL_LOCKS: '0',
          LC_ALL: 'C',
          ...options.env,
        };
        argv = await guardedArgs(cwd, args, env);
      } catch (error) {
        if (error instanceof UnguardableGitConfig)
          throw new SvcError('conflict', error.message, { details: { reason: 'unguardable_git_config' } });
        throw error;
      }
      let onFifo = false;
      const heavy = HEAVY_GIT.has(gitVerb(args));
      const limit = runnerOptions.memoryLimitBytes?.() ?? GIT_MEMORY_LIMIT_BYTES;
      const command = heavy
        ? await wrapped('git', argv, limit)
        : { file: 'git', args: argv, memoryLimitBytes: 0 };
      const viaWrapper = command.file !== 'git';
      return new Promise((resolve, reject) => {
        const child = execFile(
          command.file,
          command.args,
          // A git that never ends (a FIFO where it reads a file) is killed, not waited for.
          {
            cwd,
            env,
            maxBuffer: 256 * 1024 * 1024,
            encoding: 'utf8',
            timeout: timeoutMs,
            killSignal: 'SIGKILL',
          },
          (error, stdout, stderr) => {
            stopWatching();
            const code = error ? (typeof error.code === 'number' ? error.code : 1) : 0;
            // setpriv or prlimit could not exec git (their own message, not git's, on stderr).
            const notExecuted =
              viaWrapper && WRAPPER_EXEC_FAILED.has(code) && /^(setpriv|prlimit): /.test(stderr);
            if (notExecuted || (error && (error as NodeJS.ErrnoException).code === 'ENOENT')) {
              reject(
                new SvcError('unavailable', 'git is not installed or not on PATH; checkpoints need git'),
              );
              return;
            }
            if (error && onFifo) {
              reject(
                new SvcError(
                  'conflict',
                  `git ${gitVerb(args)} was stopped: it was waiting to open a FIFO (a named pipe) in the repository, such as a .gitignore or .gitattributes in a subdirectory; svc runs no git there until that file is a regular one (\`find . -type p\` lists them)`,
                  { details: { reason: 'git_fifo', args } },
                ),
              );
              return;
            }
            if (error?.killed) {
              reject(
                new SvcError(
                  'timeout',
                  `git ${gitVerb(args)} did not finish within ${timeoutMs / 1000} s and was stopped; check the repository for a file git cannot read (a FIFO, such as a .gitignore in a subdirectory) or a very large tree`,
                ),
              );
              return;
            }
            // git's own words when an allocation fails (xmalloc's die, or the OS's ENOMEM).
            if (
              code !== 0 &&
              command.memoryLimitBytes &&
              /out of memory|cannot allocate memory/i.test(stderr)
            ) {
              const mib = Math.round(command.memoryLimitBytes / 1024 / 1024);
              reject(
                new SvcError(
                  'conflict',
                  `git ${gitVerb(args)} was stopped: it ran out of its ${mib} MiB memory limit (a very large pack, file or diff in the repository); to allow more, raise options.git.memory_limit_mb`,
                  { details: { reason: 'memory', args, memory_limit_bytes: command.memoryLimitBytes } },
                ),
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
        // A git waiting to open a FIFO never ends by itself: stopped now, not at the timeout.
        const stopWatching = fifoCheckMs
          ? watchFifoWait(
              child.pid,
              () => {
                onFifo = true;
                child.kill('SIGKILL');
              },
              fifoCheckMs,
            )
          : () => {};
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
    if (!copyIndex(join(repo.gitDir, 'index'), index) && repo.head)
      await git.run(['read-tree', repo.head], { env });
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

/**
 * Copy the user's index when it is a regular file: opened without following a symlink and without
 * waiting, so a FIFO a command put there (it is in the workspace) cannot stop svc's process in
 * `open` (stop 81, found by probing: `mkfifo .git/index` froze every session of a service).
 */
function copyIndex(from: string, to: string): boolean {
  let fd: number;
  try {
    fd = openSync(from, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch {
    return false;
  }
  try {
    if (!fstatSync(fd).isFile()) return false;
    writeFileSync(to, readFileSync(fd));
    return true;
  } finally {
    closeSync(fd);
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

/** The git command of an argv for messages: `commit` in `-c user.name=svc commit …`, not `-c`. */
export function gitVerb(args: readonly string[]): string {
  for (let i = 0; i < args.length; i++) {
    const arg = args[i];
    if (arg === '-c' || arg === '-C' || arg === '--git-dir' || arg === '--work-tree') i++;
    else if (!arg.startsWith('-')) return arg;
  }
  return args[0] ?? '';
}
