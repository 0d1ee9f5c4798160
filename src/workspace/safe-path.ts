/**
 * File operations on workspace paths that never follow a symlink in any path component. A path
 * computed earlier (a checkpoint restore's list of files to remove, planned before the approval
 * and the safety checkpoint) can meet a tree that changed since: a directory swapped for a
 * symlink to elsewhere would carry a plain `unlinkSync(join(root, path))` outside the workspace.
 * Here each parent is opened component by component with O_NOFOLLOW | O_DIRECTORY and the
 * operation runs relative to the last one's descriptor (`/proc/self/fd/N/name` on Linux, so a
 * rename after the walk cannot redirect it); elsewhere each parent is checked with lstat first.
 * A path whose parent is a symlink or not a directory is refused with a reason, never followed.
 * A symlink that is the final component is itself removed or read (its target path), never its
 * target.
 * @module
 */

import {
  closeSync,
  constants,
  existsSync,
  fstatSync,
  lstatSync,
  mkdirSync,
  openSync,
  readFileSync,
  readlinkSync,
  rmdirSync,
  type Stats,
  unlinkSync,
} from 'node:fs';
import { join } from 'node:path';
import { replaceAtomically } from './file-io';

/** A workspace path an operation left alone, and why. */
export interface SkippedPath {
  path: string;
  reason: string;
}

export const PARENT_SYMLINK = 'a parent is a symlink';
export const PARENT_NOT_DIRECTORY = 'a parent is not a directory';

type Refused = { ok: false; reason: string; missing: boolean };
type Parent = { ok: true; dir: string; name: string; close(): void } | Refused;

const NOFOLLOW = constants.O_NOFOLLOW ?? 0;
const DIRECTORY = constants.O_DIRECTORY ?? 0;
let procFd: boolean | undefined;
const fdRelative = () => {
  procFd ??= process.platform === 'linux' && DIRECTORY !== 0 && existsSync('/proc/self/fd');
  return procFd;
};

/** Tests only: force the lstat walk (false) or the detected mode (undefined). */
export function setFdRelative(on: false | undefined): void {
  procFd = on;
}

const codeOf = (error: unknown) => (error as NodeJS.ErrnoException).code;

/** Why opening `abs` as a directory without following failed: a symlink, something else, or absent. */
function refusal(abs: string, error: unknown): Refused {
  const code = codeOf(error);
  if (code === 'ENOENT') return { ok: false, reason: 'a parent does not exist', missing: true };
  if (code !== 'ENOTDIR' && code !== 'ELOOP') throw error;
  let link = false;
  try {
    link = lstatSync(abs).isSymbolicLink();
  } catch {
    // gone meanwhile: whatever it was, it is no directory to go through
  }
  return { ok: false, reason: link ? PARENT_SYMLINK : PARENT_NOT_DIRECTORY, missing: false };
}

/** Makes the directory `abs` when it is missing; true when it made it. */
function madeDir(abs: string): boolean {
  try {
    mkdirSync(abs);
    return true;
  } catch (error) {
    if (codeOf(error) === 'EEXIST') return false;
    throw error;
  }
}

/**
 * The parent directory of `rel` under `root`, reached without following a symlink below root.
 * `create`: missing directories on the way are made (each made, then opened without following).
 */
function openParent(root: string, rel: string, create = false): Parent {
  const parts = rel.split('/');
  if (parts.some((p) => p === '' || p === '.' || p === '..')) {
    return { ok: false, reason: 'not a workspace-relative path', missing: false };
  }
  const name = parts.pop() as string;
  if (!fdRelative()) {
    let dir = root;
    for (const part of parts) {
      dir = join(dir, part);
      let stat: Stats;
      try {
        if (create && !existsSync(dir)) madeDir(dir);
        stat = lstatSync(dir);
      } catch (error) {
        return refusal(dir, error);
      }
      if (stat.isSymbolicLink()) return { ok: false, reason: PARENT_SYMLINK, missing: false };
      if (!stat.isDirectory()) return { ok: false, reason: PARENT_NOT_DIRECTORY, missing: false };
    }
    return { ok: true, dir, name, close: () => {} };
  }
  let fd = openSync(root, constants.O_RDONLY | DIRECTORY);
  try {
    for (const part of parts) {
      const next = `/proc/self/fd/${fd}/${part}`;
      let child: number;
      try {
        child = openDir(next, create);
      } catch (error) {
        const refused = refusal(next, error);
        closeSync(fd);
        return refused;
      }
      closeSync(fd);
      fd = child;
    }
  } catch (error) {
    closeSync(fd);
    throw error;
  }
  const held = fd;
  return { ok: true, dir: `/proc/self/fd/${held}`, name, close: () => closeSync(held) };
}

function openDir(abs: string, create: boolean): number {
  try {
    return openSync(abs, constants.O_RDONLY | DIRECTORY | NOFOLLOW);
  } catch (error) {
    if (!create || codeOf(error) !== 'ENOENT') throw error;
    madeDir(abs);
    return openSync(abs, constants.O_RDONLY | DIRECTORY | NOFOLLOW);
  }
}

function withParent<T>(
  root: string,
  rel: string,
  run: (abs: string) => T,
  create = false,
): { ok: true; value: T } | Refused {
  const parent = openParent(root, rel, create);
  if (!parent.ok) return parent;
  try {
    return { ok: true, value: run(join(parent.dir, parent.name)) };
  } finally {
    parent.close();
  }
}

export type RemoveOutcome = { status: 'removed' | 'absent' } | { status: 'skipped'; reason: string };

/**
 * Removes the file (or symlink itself) at workspace-relative `rel`. `absent` when it or a parent
 * is already gone; `skipped` when a parent is a symlink or no directory, or `rel` is a directory.
 */
export function removeNoFollow(root: string, rel: string): RemoveOutcome {
  try {
    return removeOrRefuse(root, rel);
  } catch (error) {
    return { status: 'skipped', reason: `it could not be removed (${codeOf(error) ?? String(error)})` };
  }
}

function removeOrRefuse(root: string, rel: string): RemoveOutcome {
  const done = withParent(root, rel, (abs): RemoveOutcome => {
    try {
      unlinkSync(abs); // unlink never follows the final component: a symlink goes, not its target
      return { status: 'removed' };
    } catch (error) {
      const code = codeOf(error);
      if (code === 'ENOENT') return { status: 'absent' };
      if (code === 'EISDIR' || code === 'EPERM') return { status: 'skipped', reason: 'it is a directory' };
      throw error;
    }
  });
  if (done.ok) return done.value;
  return done.missing ? { status: 'absent' } : { status: 'skipped', reason: done.reason };
}

/**
 * The content at workspace-relative `rel`, for the file history: a regular file's bytes (up to
 * `maxBytes`), a symlink's target path (what git stores for it), else null — as is a path with a
 * parent that is a symlink or no directory.
 */
export function readNoFollow(root: string, rel: string, maxBytes: number): Buffer | null {
  try {
    return readOrNull(root, rel, maxBytes);
  } catch {
    return null; // unreadable (permissions, a race): no content to keep
  }
}

function readOrNull(root: string, rel: string, maxBytes: number): Buffer | null {
  const done = withParent(root, rel, (abs): Buffer | null => {
    let fd: number;
    try {
      fd = openSync(abs, constants.O_RDONLY | NOFOLLOW | (constants.O_NONBLOCK ?? 0));
    } catch (error) {
      if (codeOf(error) !== 'ELOOP') return null;
      try {
        return Buffer.from(readlinkSync(abs, 'buffer'));
      } catch {
        return null;
      }
    }
    try {
      const stat = fstatSync(fd);
      return stat.isFile() && stat.size <= maxBytes ? readFileSync(fd) : null;
    } finally {
      closeSync(fd);
    }
  });
  return done.ok ? done.value : null;
}

/** lstat of workspace-relative `rel`, undefined when absent or reached only through a symlink. */
export function lstatNoFollow(root: string, rel: string): Stats | undefined {
  try {
    const done = withParent(root, rel, (abs) => lstatSync(abs, { throwIfNoEntry: false }));
    return done.ok ? done.value : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Removes the directory at workspace-relative `relDir` and then each parent while they are empty,
 * stopping at the first that is not (or is a symlink, or is reached through one); never the root.
 */
export function pruneEmptyDirsNoFollow(root: string, relDir: string): void {
  const parts = relDir.split('/').filter((p) => p !== '' && p !== '.');
  while (parts.length > 0) {
    try {
      // rmdir fails on a non-empty directory and on a symlink (ENOTDIR): either ends the walk.
      const done = withParent(root, parts.join('/'), (abs) => rmdirSync(abs));
      if (!done.ok) return;
    } catch {
      return;
    }
    parts.pop();
  }
}

/**
 * Writes `data` to workspace-relative `rel` atomically (a temporary file beside it, then a rename
 * over it; a regular file's mode is kept), making missing parent directories, and never through a
 * symlink in a parent: `root` and `rel` must be real (symlinks resolved just before). A parent
 * swapped for a symlink since is refused with a reason, nothing written; a symlink put in the
 * final place is replaced, never followed.
 */
export function writeNoFollow(root: string, rel: string, data: string | Buffer): { ok: true } | Refused {
  const done = withParent(
    root,
    rel,
    (abs) => {
      const before = lstatSync(abs, { throwIfNoEntry: false });
      replaceAtomically(abs, data, before?.isFile() ? before.mode & 0o7777 : undefined);
    },
    true,
  );
  return done.ok ? { ok: true } : done;
}
