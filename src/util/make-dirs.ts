/**
 * `mkdir -p` that always ends. Node's own (`mkdirSync(dir, { recursive: true })`, and the
 * promise form) never returns where `mkdir` answers ENOENT under a parent that exists: a path
 * under `/proc` (procfs answers ENOENT for a new name) makes it step back to the parent (EEXIST),
 * forward to the child (ENOENT) and so on, at 100% CPU, with the event loop stopped for the
 * synchronous form (nodejs/node's `MKDirpSync`, every Node line svc supports). A data dir, `HOME`
 * or `XDG_CACHE_HOME` under `/proc` hung `svc` that way. Here each missing ancestor is made once,
 * top down, and a child that is still not found once its parent exists is an ENOENT error.
 * @module
 */
import { mkdirSync, statSync } from 'node:fs';
import { dirname, resolve } from 'node:path';

/**
 * Makes `dir` and its missing ancestors (with `mode` for each one made), as `mkdirSync(dir,
 * { recursive: true, mode })` does: nothing when it is a directory already (a symlink to one
 * included); throws its errors (ENOENT, EACCES, ENOTDIR, EEXIST for a file in the way) and never
 * loops.
 */
export function makeDirs(dir: string, mode?: number): void {
  const path = resolve(dir);
  if (tryMkdir(path, mode) !== 'missing-parent') return;
  const parent = dirname(path);
  if (parent === path) throw notFound(path);
  try {
    makeDirs(parent, mode);
  } catch (error) {
    // Something not a directory is there (a dangling symlink): the child is what is not found,
    // as Node says.
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') throw notFound(path);
    throw error;
  }
  // The parent is there now: a second ENOENT is final (procfs, a vanished parent).
  if (tryMkdir(path, mode) === 'missing-parent') throw notFound(path);
}

/** `mkdir` of one level: done, or the parent is missing; other errors thrown. */
function tryMkdir(path: string, mode: number | undefined): 'done' | 'missing-parent' {
  try {
    mkdirSync(path, mode === undefined ? undefined : { mode });
    return 'done';
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return 'missing-parent';
    if (code === 'EEXIST' && isDirectory(path)) return 'done';
    throw error;
  }
}

function isDirectory(path: string): boolean {
  try {
    return statSync(path).isDirectory();
  } catch {
    return false;
  }
}

function notFound(path: string): NodeJS.ErrnoException {
  return Object.assign(new Error(`ENOENT: no such file or directory, mkdir '${path}'`), {
    errno: -2,
    code: 'ENOENT',
    syscall: 'mkdir',
    path,
  });
}
