/**
 * The repository state of the workspace for the snapshot and preflight readouts: branch, HEAD,
 * upstream and ahead/behind, staged/unstaged/untracked/conflicted counts (one `git status
 * --porcelain=v2 --branch` call, without optional locks) and operations in progress.
 * @module
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { Config } from '../config/schema';
import { configuredGitLimit, createGitRunner, type GitRunner } from '../workspace/git';

export interface GitState {
  is_repo: boolean;
  /** Why not, when git is missing or the workspace is outside a repository. */
  reason: string | null;
  root: string | null;
  branch: string | null;
  head: string | null;
  /** HEAD points at a commit, not a branch. */
  detached: boolean;
  /** The branch has no commit yet. */
  unborn: boolean;
  upstream: string | null;
  ahead: number | null;
  behind: number | null;
  staged: number;
  unstaged: number;
  /** Untracked entries (an untracked directory counts once). */
  untracked: number;
  conflicted: number;
  /** Tracked paths with a staged or unstaged change. */
  changed: number;
  dirty: boolean;
  /** merge, rebase, cherry_pick, revert, bisect. */
  operations: string[];
  /** Absolute git dir (not part of the JSON readouts). */
  git_dir?: string;
}

/**
 * Where git runs: the workspace, with the environment svc was started with, under the configured
 * memory limit (options.git.memory_limit_mb, for the heavy commands).
 */
export interface GitStateDeps {
  readonly workspace: string;
  readonly env: Readonly<Record<string, string | undefined>>;
  readonly config: Pick<Config, 'options'>;
}

/** The longest a readout's git call takes: a readout answers promptly, or says git could not. */
const READOUT_TIMEOUT_MS = 60_000;

export function gitRunnerFor(app: GitStateDeps): GitRunner {
  return createGitRunner(app.workspace, app.env, {
    timeoutMs: READOUT_TIMEOUT_MS,
    // Read from the app at each call: a reloaded config applies.
    ...configuredGitLimit(() => app.config),
  });
}

export async function readGitState(app: GitStateDeps, git: GitRunner = gitRunnerFor(app)): Promise<GitState> {
  const empty: GitState = {
    is_repo: false,
    reason: null,
    root: null,
    branch: null,
    head: null,
    detached: false,
    unborn: false,
    upstream: null,
    ahead: null,
    behind: null,
    staged: 0,
    unstaged: 0,
    untracked: 0,
    conflicted: 0,
    changed: 0,
    dirty: false,
    operations: [],
  };
  let probe: Awaited<ReturnType<GitRunner['run']>>;
  try {
    probe = await git.run(['rev-parse', '--show-toplevel', '--absolute-git-dir'], { allowFail: true });
  } catch (error) {
    return { ...empty, reason: error instanceof Error ? error.message : String(error) };
  }
  if (probe.code !== 0) return { ...empty, reason: `${app.workspace} is not inside a git repository` };
  const [root, gitDir] = probe.stdout.trim().split('\n');
  const state: GitState = { ...empty, is_repo: true, root, git_dir: gitDir };
  let status: Awaited<ReturnType<GitRunner['run']>>;
  try {
    status = await git.run(['status', '--porcelain=v2', '--branch', '--untracked-files=normal'], {
      allowFail: true,
    });
  } catch (error) {
    // Stopped (a FIFO where git reads a file, the readout's timeout): the readout says so, and answers.
    return { ...state, reason: error instanceof Error ? error.message : String(error) };
  }
  if (status.code !== 0) {
    // A repository git cannot read (damaged objects, a broken index) is not a clean one: say why.
    const why = status.stderr.trim().split('\n').slice(-1)[0] || `exit ${status.code}`;
    return { ...state, reason: `git status failed: ${why}` };
  }
  for (const line of status.stdout.split('\n')) {
    if (line.startsWith('# branch.oid ')) {
      const oid = line.slice('# branch.oid '.length).trim();
      state.unborn = oid === '(initial)';
      state.head = state.unborn ? null : oid;
    } else if (line.startsWith('# branch.head ')) {
      const head = line.slice('# branch.head '.length).trim();
      state.detached = head === '(detached)';
      state.branch = state.detached ? null : head;
    } else if (line.startsWith('# branch.upstream ')) {
      state.upstream = line.slice('# branch.upstream '.length).trim();
    } else if (line.startsWith('# branch.ab ')) {
      const match = /\+(\d+) -(\d+)/.exec(line);
      if (match) {
        state.ahead = Number(match[1]);
        state.behind = Number(match[2]);
      }
    } else if (line.startsWith('1 ') || line.startsWith('2 ')) {
      const xy = line.slice(2, 4);
      if (xy[0] !== '.') state.staged++;
      if (xy[1] !== '.') state.unstaged++;
      state.changed++;
    } else if (line.startsWith('u ')) {
      state.conflicted++;
      state.changed++;
    } else if (line.startsWith('? ')) {
      state.untracked++;
    }
  }
  state.dirty = state.changed > 0 || state.untracked > 0;
  const operations: [string, string][] = [
    ['merge', 'MERGE_HEAD'],
    ['rebase', 'rebase-merge'],
    ['rebase', 'rebase-apply'],
    ['cherry_pick', 'CHERRY_PICK_HEAD'],
    ['revert', 'REVERT_HEAD'],
    ['bisect', 'BISECT_LOG'],
  ];
  for (const [name, file] of operations) {
    if (existsSync(join(gitDir, file)) && !state.operations.includes(name)) state.operations.push(name);
  }
  return state;
}

/** The readout view of the state (no absolute git dir). */
export function gitView(state: GitState): Omit<GitState, 'git_dir'> {
  const { git_dir: _gitDir, ...view } = state;
  return view;
}
