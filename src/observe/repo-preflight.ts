/**
 * `get_repo_preflight_status`: checks of the repository before a run, each pass, warn or fail,
 * with a one-line summary. Thresholds are fixed here and documented in docs/readouts.md.
 * @module
 */
import { realpathSync, statSync } from 'node:fs';
import { join, relative, sep } from 'node:path';
import { MAX_WALKED_FILES } from './codebase-summary';
import { type GitState, gitRunnerFor, readGitState } from './git-state';
import type { WorkspaceReadoutDeps } from './workspace-snapshot';

export type CheckStatus = 'pass' | 'warn' | 'fail';

export interface PreflightCheck {
  id:
    | 'git_repository'
    | 'working_tree'
    | 'branch'
    | 'upstream'
    | 'operation_in_progress'
    | 'untracked_files'
    | 'large_files'
    | 'data_dir_ignored';
  status: CheckStatus;
  summary: string;
  detail: Record<string, unknown>;
}

/** More untracked entries than this is a warning (a missing .gitignore, generated files). */
export const UNTRACKED_WARN = 50;
/** Files at or above this size are listed as large (warn). */
export const LARGE_FILE_WARN_BYTES = 5 * 1024 * 1024;
/** Files at or above this size fail (hosting services refuse pushes with them). */
export const LARGE_FILE_FAIL_BYTES = 100 * 1024 * 1024;
const MAX_LISTED_LARGE = 10;

export async function buildRepoPreflight(app: WorkspaceReadoutDeps, signal?: AbortSignal) {
  const git = gitRunnerFor(app);
  const state = await readGitState(app, git);
  const checks: PreflightCheck[] = [];
  const notRepo = (id: PreflightCheck['id']): PreflightCheck => ({
    id,
    status: 'warn',
    summary: 'skipped: not a git repository',
    detail: { skipped: true },
  });

  checks.push(
    state.is_repo
      ? {
          id: 'git_repository',
          status: 'pass',
          summary: `git repository at ${state.root}`,
          detail: { root: state.root },
        }
      : {
          id: 'git_repository',
          status: 'fail',
          summary: `not a git repository (${state.reason}); checkpoints and diffs need one: run git init`,
          detail: { reason: state.reason },
        },
  );
  if (state.is_repo) {
    checks.push(workingTree(state), branch(state), upstream(state), operations(state), untracked(state));
  } else {
    checks.push(
      notRepo('working_tree'),
      notRepo('branch'),
      notRepo('upstream'),
      notRepo('operation_in_progress'),
    );
    checks.push(notRepo('untracked_files'));
  }
  checks.push(await largeFiles(app, signal));
  checks.push(state.is_repo ? await dataDirIgnored(app, git, state) : notRepo('data_dir_ignored'));

  const counts = { pass: 0, warn: 0, fail: 0 };
  for (const check of checks) counts[check.status]++;
  const status: CheckStatus = counts.fail ? 'fail' : counts.warn ? 'warn' : 'pass';
  return {
    workspace: app.workspace,
    generated_at: app.clock.now(),
    status,
    counts,
    checks,
  };
}

function workingTree(s: GitState): PreflightCheck {
  const detail = { staged: s.staged, unstaged: s.unstaged, untracked: s.untracked, conflicted: s.conflicted };
  if (s.reason)
    return {
      id: 'working_tree',
      status: 'fail',
      summary: `git cannot read the working tree (${s.reason}); the repository may be damaged: run git fsck`,
      detail: { ...detail, reason: s.reason },
    };
  if (s.conflicted)
    return {
      id: 'working_tree',
      status: 'fail',
      summary: `${s.conflicted} conflicted path(s) to resolve`,
      detail,
    };
  if (s.changed)
    return {
      id: 'working_tree',
      status: 'warn',
      summary: `dirty: ${s.changed} changed tracked path(s) (${s.staged} staged, ${s.unstaged} unstaged); checkpoint before a run`,
      detail,
    };
  return {
    id: 'working_tree',
    status: 'pass',
    summary: s.untracked ? `clean (tracked files); ${s.untracked} untracked` : 'clean',
    detail,
  };
}

function branch(s: GitState): PreflightCheck {
  const detail = { branch: s.branch, head: s.head, detached: s.detached, unborn: s.unborn };
  if (s.detached)
    return {
      id: 'branch',
      status: 'warn',
      summary: `detached HEAD at ${s.head?.slice(0, 12)}; commits would be on no branch`,
      detail,
    };
  if (s.unborn)
    return { id: 'branch', status: 'warn', summary: `branch ${s.branch} has no commits yet`, detail };
  return {
    id: 'branch',
    status: 'pass',
    summary: `on branch ${s.branch} at ${s.head?.slice(0, 12)}`,
    detail,
  };
}

function upstream(s: GitState): PreflightCheck {
  const detail = { upstream: s.upstream, ahead: s.ahead, behind: s.behind };
  if (!s.upstream || s.ahead === null || s.behind === null)
    return {
      id: 'upstream',
      status: 'warn',
      summary: s.upstream ? `upstream ${s.upstream} is gone` : 'no upstream branch to compare with',
      detail,
    };
  if (s.behind > 0)
    return {
      id: 'upstream',
      status: 'warn',
      summary: `${s.behind} commit(s) behind ${s.upstream}${s.ahead ? ` and ${s.ahead} ahead (diverged)` : ''}; pull first`,
      detail,
    };
  return {
    id: 'upstream',
    status: 'pass',
    summary: s.ahead ? `${s.ahead} commit(s) ahead of ${s.upstream}` : `up to date with ${s.upstream}`,
    detail,
  };
}

function operations(s: GitState): PreflightCheck {
  return s.operations.length
    ? {
        id: 'operation_in_progress',
        status: 'fail',
        summary: `${s.operations.join(', ')} in progress; finish or abort it before a run`,
        detail: { operations: s.operations },
      }
    : {
        id: 'operation_in_progress',
        status: 'pass',
        summary: 'no merge, rebase, cherry-pick, revert or bisect in progress',
        detail: { operations: [] },
      };
}

function untracked(s: GitState): PreflightCheck {
  return {
    id: 'untracked_files',
    status: s.untracked > UNTRACKED_WARN ? 'warn' : 'pass',
    summary:
      s.untracked > UNTRACKED_WARN
        ? `${s.untracked} untracked entries (more than ${UNTRACKED_WARN}); check .gitignore`
        : `${s.untracked} untracked entr${s.untracked === 1 ? 'y' : 'ies'}`,
    detail: { untracked: s.untracked, warn_above: UNTRACKED_WARN },
  };
}

async function largeFiles(app: WorkspaceReadoutDeps, signal?: AbortSignal): Promise<PreflightCheck> {
  const listing = await app.ws.search.files(
    { limit: MAX_WALKED_FILES },
    { tool: 'get_repo_preflight_status', signal },
  );
  const large: { path: string; bytes: number }[] = [];
  for (const file of listing.files) {
    try {
      const bytes = statSync(join(app.ws.root, file)).size;
      if (bytes >= LARGE_FILE_WARN_BYTES) large.push({ path: file, bytes });
    } catch {
      // vanished between listing and stat
    }
  }
  large.sort((a, b) => b.bytes - a.bytes || a.path.localeCompare(b.path));
  const huge = large.filter((f) => f.bytes >= LARGE_FILE_FAIL_BYTES).length;
  const detail = {
    scanned: listing.files.length,
    truncated: listing.truncated,
    warn_at_bytes: LARGE_FILE_WARN_BYTES,
    fail_at_bytes: LARGE_FILE_FAIL_BYTES,
    count: large.length,
    files: large.slice(0, MAX_LISTED_LARGE),
  };
  if (huge)
    return {
      id: 'large_files',
      status: 'fail',
      summary: `${huge} file(s) of 100 MiB or more (not ignored)`,
      detail,
    };
  if (large.length)
    return {
      id: 'large_files',
      status: 'warn',
      summary: `${large.length} file(s) of 5 MiB or more (not ignored)`,
      detail,
    };
  return {
    id: 'large_files',
    status: 'pass',
    summary: `no file of 5 MiB or more among ${listing.files.length}`,
    detail,
  };
}

async function dataDirIgnored(
  app: WorkspaceReadoutDeps,
  git: ReturnType<typeof gitRunnerFor>,
  s: GitState,
): Promise<PreflightCheck> {
  // git reports the real path of the root: compare real paths (symlinked workspaces).
  let dataDir = app.dataDir;
  try {
    dataDir = realpathSync(app.dataDir);
  } catch {
    // not created yet
  }
  const rel = relative(s.root ?? app.workspace, dataDir);
  if (!rel || rel.startsWith('..') || rel.startsWith(sep)) {
    return {
      id: 'data_dir_ignored',
      status: 'pass',
      summary: 'svc data directory is outside the repository',
      detail: { data_dir: app.dataDir, inside_repository: false, ignored: null },
    };
  }
  const path = `${rel.split(sep).join('/')}/`;
  // Absolute: git resolves it inside the work tree whatever subdirectory the workspace is.
  const probe = await git.run(['check-ignore', '-q', '--no-index', `${dataDir}/`], { allowFail: true });
  const ignored = probe.code === 0;
  return ignored
    ? {
        id: 'data_dir_ignored',
        status: 'pass',
        summary: `${path} is ignored by git`,
        detail: { data_dir: path, inside_repository: true, ignored: true },
      }
    : {
        id: 'data_dir_ignored',
        status: 'warn',
        summary: `${path} is not ignored by git: svc.db and logs would show as untracked; add "${path}" to .gitignore`,
        detail: { data_dir: path, inside_repository: true, ignored: false },
      };
}
