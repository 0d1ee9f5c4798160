/**
 * svc's data directory (default `<workspace>/.svc`) holds the database, logs and caches next to
 * the workspace config (`svc.toml`, `packs/`, `recipes/`). When svc creates the directory it
 * also writes a `.gitignore` there, so `git status` shows the config a team may commit and never
 * the data. A directory that already exists is left as it is: it may be the user's own.
 *
 * What svc creates there is its user's only (stop 81, found by probing: the directory was 0755 and
 * svc.db 0644 under the usual umask, so every local user could read the sessions, tool output and
 * the service processes' rows): the directory is made 0700 and a new database file 0600 (SQLite
 * gives its -wal and -shm files the database's mode).
 * @module
 */
import {
  accessSync,
  chmodSync,
  closeSync,
  constants,
  existsSync,
  openSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { SvcError } from '../errors';
import { makeDirs } from '../util/make-dirs';
import { copyTemplate } from './template';

export const DATA_DIR_GITIGNORE = `# Written by svc when it created this directory: its data (svc.db, logs, caches) stays out of
# git (this file too); the workspace config (svc.toml, packs/, recipes/) can be committed.
*
!svc.toml
!packs/
!packs/**
!recipes/
!recipes/**
`;

/** Create the data directory if it is missing, with its `.gitignore`. Throws like mkdirSync. */
export function ensureDataDir(dir: string): void {
  if (existsSync(dir)) {
    if (statSync(dir).isDirectory()) return;
    throw Object.assign(new Error(`${dir} is not a directory`), { code: 'ENOTDIR' });
  }
  makeDirs(dir, 0o700);
  try {
    writeFileSync(join(dir, '.gitignore'), DATA_DIR_GITIGNORE, { flag: 'wx' });
  } catch {
    // best effort: a data dir without the file still works
  }
}

/**
 * The data dir made (when missing) and writable, or a config error (CLI exit 2): the directory is
 * a setting (--data-dir, SVC_DATA_DIR, options.data_directory), so the fix is choosing another one.
 * Over HTTP it stays a 503: the server's storage is unavailable, not the client's request wrong.
 */
export function usableDataDir(dir: string): void {
  const refuse = (what: string, error: unknown) =>
    new SvcError(
      'config_error',
      `data dir ${dir} ${what} (${(error as NodeJS.ErrnoException).code ?? 'error'}); pass --data-dir or set SVC_DATA_DIR to a writable directory`,
      { status: 503, cause: error },
    );
  try {
    ensureDataDir(dir);
  } catch (error) {
    const notDirectory = existsSync(dir) && (error as NodeJS.ErrnoException).code === 'ENOTDIR';
    throw refuse(notDirectory ? 'is not a directory' : 'cannot be created', error);
  }
  try {
    accessSync(dir, constants.W_OK);
  } catch (error) {
    throw refuse('is not writable', error);
  }
}

/**
 * Make the database file svc is about to create its user's only: a copy of the pre-migrated
 * `template` when there is one, else an empty file (SQLite takes it as a new database), made 0600.
 * A file there already (another process's, made meanwhile too) is left alone.
 */
export function newPrivateFile(file: string, template: string | undefined): 'existed' | 'copied' | 'empty' {
  if (existsSync(file)) return 'existed';
  if (template !== undefined && copyTemplate(template, file)) {
    try {
      chmodSync(file, 0o600);
    } catch {
      // a file system without modes
    }
    return 'copied';
  }
  try {
    closeSync(openSync(file, 'wx', 0o600));
    return 'empty';
  } catch {
    // EEXIST: another process made it meanwhile (SQLite opens it as it is)
    return 'existed';
  }
}
