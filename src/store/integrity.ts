/**
 * `svc doctor`'s look at svc.db (issue 15, item 6): whether the file is there, writable, an SQLite
 * database, and whole (SQLite's `PRAGMA integrity_check`). The file is opened read-only: a check
 * never writes, migrates or repairs anything.
 * @module
 */
import { accessSync, constants, existsSync, statSync } from 'node:fs';
import { join } from 'node:path';
import type BetterSqlite3 from 'better-sqlite3';
import { DB_FILE } from './db';
import { loadSqlite } from './sqlite-driver';

export interface DatabaseCheck {
  path: string;
  exists: boolean;
  size_bytes: number | null;
  /** Octal permission bits (`0644`), null when missing. */
  mode: string | null;
  /** svc can write the file (and its directory): not read-only by mode, not on a read-only mount. */
  writable: boolean;
  /** ok: the integrity check passed; damaged: it found problems; unreadable: not a database. */
  integrity: 'ok' | 'damaged' | 'unreadable' | 'missing';
  /** What the integrity check (or opening) reported, at most 20 lines. */
  problems: string[];
  schema_version: number | null;
  journal_mode: string | null;
  /** What to do, when something is wrong. */
  advice: string | null;
}

export function checkDatabase(dataDir: string): DatabaseCheck {
  const path = join(dataDir, DB_FILE);
  const base: DatabaseCheck = {
    path,
    exists: existsSync(path),
    size_bytes: null,
    mode: null,
    writable: false,
    integrity: 'missing',
    problems: [],
    schema_version: null,
    journal_mode: null,
    advice: null,
  };
  if (!base.exists) {
    return { ...base, writable: writable(dataDir), advice: 'none yet: svc creates it on first use' };
  }
  const stat = statSync(path);
  const out: DatabaseCheck = {
    ...base,
    size_bytes: stat.size,
    mode: (stat.mode & 0o777).toString(8).padStart(4, '0'),
    writable: (stat.mode & 0o222) !== 0 && writable(path) && writable(dataDir),
  };
  const Database = loadSqlite();
  let db: BetterSqlite3.Database | undefined;
  try {
    db = new Database(path, { readonly: true, fileMustExist: true });
    const rows = db.prepare('PRAGMA integrity_check(20)').all() as { integrity_check: string }[];
    out.problems = rows.map((r) => r.integrity_check).filter((line) => line !== 'ok');
    out.integrity = out.problems.length ? 'damaged' : 'ok';
    out.journal_mode = String(db.pragma('journal_mode', { simple: true }));
    const table = db.prepare("SELECT 1 FROM sqlite_master WHERE name = 'schema_migrations'").get();
    if (table) {
      out.schema_version = (
        db.prepare('SELECT coalesce(max(id), 0) AS v FROM schema_migrations').get() as { v: number }
      ).v;
    }
  } catch (error) {
    // SQLITE_CORRUPT: a database whose pages are damaged; SQLITE_NOTADB and the rest: no database.
    out.integrity = (error as { code?: string }).code === 'SQLITE_CORRUPT' ? 'damaged' : 'unreadable';
    out.problems = [(error as Error).message];
  } finally {
    db?.close();
  }
  if (out.integrity === 'damaged' || out.integrity === 'unreadable') {
    out.advice = `svc left ${path} untouched: copy it aside, then either restore a backup or move it away so svc starts a new one (sessions in it are lost); sqlite3 "${path}" .recover may save what is readable`;
  } else if (!out.writable) {
    out.advice = `svc cannot write ${path}: make it and ${dataDir} writable (chmod u+w), or pass --data-dir`;
  }
  return out;
}

function writable(path: string): boolean {
  try {
    accessSync(path, constants.W_OK);
    return true;
  } catch {
    return false;
  }
}
