/**
 * svc's data directory (default `<workspace>/.svc`) holds the database, logs and caches next to
 * the workspace config (`svc.toml`, `packs/`, `recipes/`). When svc creates the directory it
 * also writes a `.gitignore` there, so `git status` shows the config a team may commit and never
 * the data. A directory that already exists is left as it is: it may be the user's own.
 * @module
 */
import { existsSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { makeDirs } from '../util/make-dirs';

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
  makeDirs(dir);
  try {
    writeFileSync(join(dir, '.gitignore'), DATA_DIR_GITIGNORE, { flag: 'wx' });
  } catch {
    // best effort: a data dir without the file still works
  }
}
