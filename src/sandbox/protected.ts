/**
 * Protected locations: what no command sees and no tool reads or writes (issue 15, items 1 and 3).
 *
 * - svc's data directory (svc.db with every session's history, logs, caches) and svc's credential
 *   store (the user config dir: credentials.json, mcp-auth.json, a user svc.toml with keys). They
 *   can never be lifted. Two sub-directories of the data dir are the model's own output and stay
 *   readable: `tool-output/` (long bash output) and `jobs/` (background job logs).
 * - the built-in deny list of credential files (~/.ssh, ~/.aws, …) and the files svc reads
 *   provider credentials from, plus `options.sandbox.deny_read`; `allow_read` lifts built-ins.
 *
 * Paths are compared after symlinks are resolved (the deepest existing ancestor), so a link into
 * a protected place is refused like the place itself.
 * @module
 */
import { existsSync, realpathSync } from 'node:fs';
import { isAbsolute, join, relative, resolve, sep } from 'node:path';

export type ProtectedKind = 'data_dir' | 'credential_store' | 'deny_read';

export interface ProtectedPath {
  /** Absolute, symlinks resolved. */
  path: string;
  /** As configured or listed (`~/.ssh`), for messages. */
  label: string;
  kind: ProtectedKind;
  /** What it holds, for messages: `SSH keys`. */
  why: string;
}

export interface ProtectedPaths {
  list(): ProtectedPath[];
  /** The protected location `abs` is in (after symlinks), or undefined. */
  find(abs: string): ProtectedPath | undefined;
  /**
   * `find` for many real paths (a search's every result): the list is taken once, and each path is
   * already real, so a check costs no system call.
   */
  matcher(): (real: string) => ProtectedPath | undefined;
  /** Protected locations strictly inside `dir` (a recursive walk of `dir` would reach them). */
  inside(dir: string): ProtectedPath[];
}

/** Sub-directories of the data dir that hold the model's own command output. */
export const DATA_DIR_READABLE = ['tool-output', 'jobs'] as const;

/** Built-in deny list, relative to HOME. Documented in docs/sandbox.md. */
export const BUILTIN_DENY: readonly { path: string; why: string }[] = [
  { path: '~/.ssh', why: 'SSH keys' },
  { path: '~/.gnupg', why: 'GnuPG keys' },
  { path: '~/.aws', why: 'AWS credentials' },
  { path: '~/.azure', why: 'Azure credentials' },
  { path: '~/.config/gcloud', why: 'Google Cloud credentials' },
  { path: '~/.kube', why: 'Kubernetes credentials' },
  { path: '~/.docker', why: 'Docker registry credentials' },
  { path: '~/.netrc', why: 'login credentials (netrc)' },
  { path: '~/.npmrc', why: 'npm registry tokens' },
  { path: '~/.pypirc', why: 'PyPI tokens' },
  { path: '~/.git-credentials', why: 'git credentials' },
  { path: '~/.config/gh', why: 'GitHub CLI tokens' },
  { path: '~/.codex', why: 'Codex CLI session (svc reads provider credentials from it)' },
  {
    path: '~/.claude/.credentials.json',
    why: 'Claude Code session (svc reads provider credentials from it)',
  },
];

export interface ProtectedPathsDeps {
  /** svc's data dirs: this workspace's first, then any that holds it (a worktree's parent). */
  dataDirs: readonly string[];
  /** svc's user config dir (`$XDG_CONFIG_HOME/svc`): credential store, MCP OAuth tokens. */
  credentialDir: string;
  home: string | undefined;
  /** Files svc reads credentials from, named by the environment (GOOGLE_APPLICATION_CREDENTIALS…). */
  credentialFiles?: () => string[];
  config: () => {
    deny_read: readonly string[];
    allow_read: readonly string[];
    allow_write: readonly string[];
  };
  /** Relative entries resolve against it. */
  workspace: string;
}

export function createProtectedPaths(deps: ProtectedPathsDeps): ProtectedPaths {
  const expand = (p: string) => expandPath(p, deps.home, deps.workspace);
  const list = (): ProtectedPath[] => {
    const config = deps.config();
    const lifted = new Set([...config.allow_read, ...config.allow_write].map((p) => realOf(expand(p))));
    const out: ProtectedPath[] = [
      ...deps.dataDirs.map(
        (dir): ProtectedPath => ({
          path: realOf(resolve(dir)),
          label: dir,
          kind: 'data_dir',
          why: "svc's data (svc.db)",
        }),
      ),
      {
        path: realOf(resolve(deps.credentialDir)),
        label: deps.credentialDir,
        kind: 'credential_store',
        why: "svc's credential store",
      },
    ];
    const deny = [
      ...(deps.home ? BUILTIN_DENY : []).map((d) => ({ ...d, builtin: true })),
      ...(deps.credentialFiles?.() ?? []).map((path) => ({
        path,
        why: 'a credential file svc reads',
        builtin: true,
      })),
      ...config.deny_read.map((path) => ({
        path,
        why: 'listed in options.sandbox.deny_read',
        builtin: false,
      })),
    ];
    for (const entry of deny) {
      const path = realOf(expand(entry.path));
      if (entry.builtin && lifted.has(path)) continue;
      if (!out.some((o) => o.path === path))
        out.push({ path, label: entry.path, kind: 'deny_read', why: entry.why });
    }
    return out;
  };
  const workspace = realOf(deps.workspace);
  const matcher = () => {
    // A location that holds the workspace (a worktree inside the data dir) protects the rest of it.
    const entries = list().map((p) => ({ p, holdsWorkspace: within(p.path, workspace) }));
    return (real: string) =>
      entries.find(
        ({ p, holdsWorkspace }) =>
          within(p.path, real) &&
          !readableDataOutput(p, real) &&
          !(holdsWorkspace && within(workspace, real)),
      )?.p;
  };
  return {
    list,
    matcher,
    find: (abs) => matcher()(realOf(abs)),
    inside(dir) {
      const real = realOf(dir);
      return list().filter((p) => p.path !== real && within(real, p.path));
    },
  };
}

/** `tool-output/…` and `jobs/…` of the data dir: the model's own output, readable. */
function readableDataOutput(p: ProtectedPath, real: string): boolean {
  if (p.kind !== 'data_dir') return false;
  const rel = relative(p.path, real).split(sep);
  return rel.length >= 2 && (DATA_DIR_READABLE as readonly string[]).includes(rel[0]);
}

export function expandPath(p: string, home: string | undefined, base: string): string {
  if (home && (p === '~' || p.startsWith('~/'))) return join(home, p.slice(1));
  return resolve(base, p);
}

/** Is `path` equal to or inside `root`? */
export function within(root: string, path: string): boolean {
  const rel = relative(root, path);
  return rel === '' || (!rel.startsWith(`..${sep}`) && rel !== '..' && !isAbsolute(rel));
}

/**
 * realpath of the deepest existing ancestor, with the missing tail appended. A missing path is
 * skipped with `existsSync` (no error object): most protected paths do not exist, and the ENOENT
 * that realpath threw for each, on every tool call's path check, was ~2 ms a check (issue 17).
 */
export function realOf(abs: string): string {
  const tail: string[] = [];
  let current = resolve(abs);
  for (;;) {
    const real = existsSync(current) ? realpathOrUndefined(current) : undefined;
    if (real !== undefined) return tail.length ? join(real, ...tail.reverse()) : real;
    const parent = resolve(current, '..');
    if (parent === current) return resolve(abs);
    tail.push(current.slice(parent.length).replace(/^[/\\]/, ''));
    current = parent;
  }
}

function realpathOrUndefined(path: string): string | undefined {
  try {
    return realpathSync(path);
  } catch {
    return undefined;
  }
}
