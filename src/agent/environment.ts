/**
 * What the model is told about where it works: the workspace, platform, date, a git summary, and
 * the project's context files (AGENTS.md, CLAUDE.md, svc.md by default) found from the workspace
 * up to the repository root.
 * @module
 */
import { execFile } from 'node:child_process';
import { existsSync, statSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { readRegularFile } from '../workspace/file-io';
import { guardEnv, guardedArgs } from '../workspace/git-guard';

export interface GitSummary {
  root: string;
  branch: string | null;
  /** `git status --porcelain` lines, at most STATUS_LINES. */
  status: string[];
  changed: number;
  recent_commits: string[];
}

export interface ContextFile {
  /** Path relative to the workspace (`../AGENTS.md` for a parent directory). */
  path: string;
  content: string;
  truncated: boolean;
}

const STATUS_LINES = 20;
const CONTEXT_FILE_MAX_BYTES = 32 * 1024;

/** The guards of svc's git calls in `cwd` (git-guard.ts), asked once for the summary's calls. */
interface Guarded {
  env: Record<string, string>;
  /** The `-c` settings; undefined for a config made to get past them (no summary then). */
  guards: string[] | undefined;
}

async function guardedIn(cwd: string): Promise<Guarded> {
  // The repository's own config runs no command, and git gets no secret.
  try {
    const env = guardEnv(process.env, cwd);
    return { env, guards: await guardedArgs(cwd, [], env) };
  } catch {
    return { env: {}, guards: undefined };
  }
}

function git(
  cwd: string,
  guarded: Guarded,
  args: string[],
  signal?: AbortSignal,
): Promise<string | undefined> {
  const { env, guards } = guarded;
  if (!guards) return Promise.resolve(undefined);
  const argv = [...guards, ...args];
  const options = { cwd, timeout: 3000, signal, maxBuffer: 1024 * 1024, env };
  return new Promise((resolve) => {
    execFile('git', argv, options, (error, stdout) => resolve(error ? undefined : stdout.toString()));
  });
}

/** How long a git summary is reused: runs that start together (a burst of compat requests, a
 * scheduler tick) share one set of git processes instead of spawning four each. */
const SUMMARY_TTL_MS = 1000;
const summaries = new Map<string, { at: number; value: Promise<GitSummary | undefined> }>();

/**
 * A short git summary of the workspace, or undefined outside a repository (or without git).
 * `fresh`: read now, never the summary of the last second (a readout answers the workspace as it
 * is; the summary read is then the one the next runs share).
 */
export function gitSummary(
  workspace: string,
  signal?: AbortSignal,
  options: { fresh?: boolean } = {},
): Promise<GitSummary | undefined> {
  const now = Date.now();
  const hit = summaries.get(workspace);
  if (hit && now - hit.at < SUMMARY_TTL_MS && !options.fresh) return hit.value;
  if (signal?.aborted) return Promise.resolve(undefined);
  // Shared by the runs of the next second, so not tied to one caller's signal (git times out at 3 s).
  const value = readGitSummary(workspace);
  summaries.set(workspace, { at: now, value });
  for (const [key, entry] of summaries) if (now - entry.at >= SUMMARY_TTL_MS) summaries.delete(key);
  return value;
}

async function readGitSummary(workspace: string, signal?: AbortSignal): Promise<GitSummary | undefined> {
  // Two git processes at once (issue 17: four, one after another, were ~25 ms of a run's start):
  // `status -b` names the branch on its first line, and the root is the directory holding `.git`.
  // Before them one `git config` for the guards both take (git-guard.ts: the repository's own
  // drivers, switched off).
  const root = findRepoRoot(workspace);
  if (!root) return undefined;
  const guarded = await guardedIn(workspace);
  const [status, log] = await Promise.all([
    // --no-optional-locks: never take the index lock the user's own git commands need.
    git(
      workspace,
      guarded,
      ['--no-optional-locks', 'status', '--porcelain=v1', '-b', '--untracked-files=normal'],
      signal,
    ),
    git(workspace, guarded, ['log', '--oneline', '-5', '--no-decorate'], signal),
  ]);
  // Not a repository git can read (a stray `.git`, a repository of another owner): no summary.
  if (status === undefined) return undefined;
  const [head = '', ...rest] = status.split('\n');
  const lines = rest.filter(Boolean);
  return {
    root,
    branch: branchOf(head),
    status: lines.slice(0, STATUS_LINES),
    changed: lines.length,
    recent_commits: (log ?? '').split('\n').filter(Boolean),
  };
}

/**
 * The branch in `git status -b`'s header: `## main...origin/main [ahead 1]`, `## No commits yet
 * on main`, `## HEAD (no branch)` (detached: null).
 */
export function branchOf(header: string): string | null {
  const text = header.replace(/^## /, '');
  if (text.startsWith('HEAD (no branch)')) return null;
  const unborn = /^(?:No commits yet|Initial commit) on (.+)$/.exec(text);
  if (unborn) return unborn[1];
  return text.split('...')[0].split(' ')[0] || null;
}

/** The repository root above `start` (a directory holding `.git`), if any. */
export function findRepoRoot(start: string): string | undefined {
  let dir = start;
  for (let i = 0; i < 64; i++) {
    if (existsSync(join(dir, '.git'))) return dir;
    const parent = dirname(dir);
    if (parent === dir) return undefined;
    dir = parent;
  }
  return undefined;
}

/**
 * Context files from the repository root down to the workspace (outermost first, so the more
 * specific instructions come last). Outside a repository only the workspace is searched.
 *
 * Every run asks (a compat request is a run), and the answer is nearly always the last one: it is
 * kept with the stat of each directory searched (the workspace up to the root) and of each file
 * found. A directory's mtime moves when an entry is added, removed or renamed (a new AGENTS.md, a
 * `.git`, an editor's atomic save), a file's when it is written; outside a repository each parent
 * is checked for a new `.git` as before. So a few stats tell whether the last answer still holds,
 * and an edited file is read again by the next run, as when every run read it. A stamp taken
 * within RACY_MS of its mtime is not trusted (a later write in the same timestamp tick would look
 * unchanged): such an answer is read again next time.
 */
export function findContextFiles(workspace: string, names: readonly string[]): ContextFile[] {
  const key = `${workspace}\0${names.join('\0')}`;
  const hit = contextCache.get(key);
  if (hit?.trusted && hit.stamps.every(unchanged) && !hit.noGit.some((path) => existsSync(path)))
    return [...hit.files];
  const read = readContextFiles(workspace, names);
  if (contextCache.size >= CONTEXT_CACHE_ENTRIES) contextCache.clear();
  contextCache.set(key, read);
  return [...read.files];
}

/** How close to its mtime a stat may be taken and still be trusted (coarse filesystem clocks). */
const RACY_MS = 2000;
const CONTEXT_CACHE_ENTRIES = 16;

interface Stamp {
  path: string;
  ino: number;
  size: number;
  mtimeMs: number;
  ctimeMs: number;
}

interface ContextRead {
  /** The directories searched and the files read. */
  stamps: Stamp[];
  /** Outside a repository: each parent's `.git`, absent when read. */
  noGit: string[];
  files: ContextFile[];
  /** Every stamp older than RACY_MS when taken. */
  trusted: boolean;
}

const contextCache = new Map<string, ContextRead>();

function stampOf(path: string, st = statSync(path, { throwIfNoEntry: false })): Stamp | undefined {
  return st && { path, ino: st.ino, size: st.size, mtimeMs: st.mtimeMs, ctimeMs: st.ctimeMs };
}

function unchanged(stamp: Stamp): boolean {
  const now = stampOf(stamp.path);
  return (
    now !== undefined &&
    now.ino === stamp.ino &&
    now.size === stamp.size &&
    now.mtimeMs === stamp.mtimeMs &&
    now.ctimeMs === stamp.ctimeMs
  );
}

function readContextFiles(workspace: string, names: readonly string[]): ContextRead {
  const taken = Date.now();
  const stamps: Stamp[] = [];
  const noGit: string[] = [];
  let trusted = true;
  const repo = findRepoRoot(workspace);
  // Searched: the workspace up to the root (the workspace alone outside a repository).
  const dirs: string[] = [];
  for (let dir = workspace; ; dir = dirname(dir)) {
    if (repo !== undefined || dir === workspace) {
      const s = stampOf(dir);
      if (s) stamps.push(s);
      else trusted = false;
      dirs.unshift(dir);
    } else {
      noGit.push(join(dir, '.git'));
    }
    if (dir === repo || dirname(dir) === dir) break;
  }
  const files: ContextFile[] = [];
  const seen = new Set<string>();
  for (const dir of dirs) {
    for (const name of names) {
      const full = join(dir, name);
      if (seen.has(full)) continue;
      seen.add(full);
      try {
        // Most names are absent: no exception for those (throwing one per name showed in profiles).
        const st = statSync(full, { throwIfNoEntry: false });
        if (!st?.isFile()) continue;
        // Stamped before the read: a write after it moves the mtime past the stamp.
        stamps.push(stampOf(full, st) as Stamp);
        // Non-blocking, checked on the open file, and no more than is kept (+1 to tell it was cut):
        // a file swapped for a FIFO after the stat, or a huge sparse one, holds nothing up.
        const buffer = readRegularFile(full, CONTEXT_FILE_MAX_BYTES + 1);
        const truncated = buffer.length > CONTEXT_FILE_MAX_BYTES;
        files.push({
          path: relative(workspace, full) || name,
          content: buffer.subarray(0, CONTEXT_FILE_MAX_BYTES).toString('utf8'),
          truncated,
        });
      } catch {
        // missing or unreadable: not a context file
      }
    }
  }
  if (stamps.some((s) => taken - s.mtimeMs < RACY_MS)) trusted = false;
  return { stamps, noGit, files, trusted };
}
