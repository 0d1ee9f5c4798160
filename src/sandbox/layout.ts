/**
 * The mounts of one sandboxed command, in bwrap's order (later mounts go over earlier ones): the
 * system read-only, a fresh /dev and /proc, a private /tmp, the workspace read-write, the
 * protected locations (./protected.ts) hidden, `allow_write` read-write, and the data dirs' shell
 * state and earlier command output showing through.
 * @module
 */
import { existsSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { ensureDataDir } from '../store/data-dir';
import { makeDirs } from '../util/make-dirs';
import { type BindMount, baseBinds } from './bwrap';
import { DATA_DIR_READABLE, type ProtectedPath, within } from './protected';

export interface LayoutInput {
  proc: 'fresh' | 'host';
  workspace: string;
  dataDir: string;
  readOnlyGit: boolean;
  writable: { path: string; exists: boolean }[];
  protectedList: ProtectedPath[];
  /** With the host's /proc (where a fresh one is refused): svc's own processes, hidden. */
  hideProcs?: readonly number[];
}

/** The mounts, in bwrap's order: later mounts go over earlier ones. */
export function buildLayout(input: LayoutInput): BindMount[] {
  const exists = input.protectedList.filter((p) => existsSync(p.path));
  // Hidden: what exists and is not inside another hidden entry (that one hides it already).
  const hidden = exists.filter((p) => !exists.some((q) => q.path !== p.path && within(q.path, p.path)));
  // A location that holds the workspace (a worktree inside the data dir) is hidden first and the
  // workspace bound on top of it; a location the workspace itself would be hidden with is skipped.
  const around = hidden.filter((p) => within(p.path, input.workspace) && p.path !== input.workspace);
  const rest = hidden.filter((p) => !within(p.path, input.workspace));
  const binds: BindMount[] = [...baseBinds(input.proc), ...around.map(hide)];
  // The host's /proc shows every process: svc's own (its environment holds its secrets) is hidden.
  if (input.proc === 'host') {
    for (const pid of input.hideProcs ?? []) {
      if (existsSync(`/proc/${pid}`))
        binds.push({ path: `/proc/${pid}`, access: 'hidden', why: "svc's own process (its environment)" });
    }
  }
  binds.push({ path: input.workspace, access: 'read-write', why: 'the workspace' });
  const svcOwn = input.protectedList.filter((p) => p.kind !== 'deny_read');
  const writable = input.writable.filter(
    (w) => w.exists && !svcOwn.some((p) => within(p.path, w.path) || within(w.path, p.path)),
  );
  for (const extra of writable)
    binds.push({ path: extra.path, access: 'read-write', why: 'options.sandbox.allow_write' });
  const git = join(input.workspace, '.git');
  if (input.readOnlyGit && existsSync(git))
    binds.push({ path: git, access: 'read-only', why: 'options.sandbox.read_only_git' });
  for (const p of rest.filter((h) => h.kind === 'deny_read')) binds.push(hide(p));
  // An allow_write directory inside a hidden one is bound again on top of it.
  for (const extra of writable) {
    if (rest.some((h) => h.kind === 'deny_read' && within(h.path, extra.path) && h.path !== extra.path))
      binds.push({ path: extra.path, access: 'read-write', why: 'options.sandbox.allow_write' });
  }
  for (const p of rest.filter((h) => h.kind !== 'deny_read')) binds.push(hide(p));
  // The data dirs' shell state (read-write) and earlier command output (read-only) show through.
  for (const p of exists.filter((e) => e.kind === 'data_dir')) {
    const shell = join(p.path, 'shell');
    if (existsSync(shell))
      binds.push({ path: shell, access: 'read-write', why: "svc's shell state (the cwd between calls)" });
    for (const name of DATA_DIR_READABLE) {
      const dir = join(p.path, name);
      if (existsSync(dir))
        binds.push({ path: dir, access: 'read-only', why: 'output of earlier commands (readable)' });
    }
  }
  return binds;
}

function hide(p: ProtectedPath): BindMount {
  const file = isFile(p.path);
  return {
    path: p.path,
    access: 'hidden',
    why: `${p.why} (${p.label}): not mounted`,
    ...(file ? { file } : {}),
  };
}

/** The data dir and the sub-directories bound into the sandbox must exist before bwrap runs. */
export function prepareDataDir(dataDir: string): void {
  try {
    ensureDataDir(dataDir);
    for (const name of ['shell', ...DATA_DIR_READABLE]) makeDirs(join(dataDir, name));
  } catch {
    // An unwritable data dir: the binds that need it fail below with bwrap's own message.
  }
}

function isFile(path: string): boolean {
  try {
    return statSync(path).isFile();
  } catch {
    return false;
  }
}
