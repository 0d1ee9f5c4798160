/**
 * A pre-migrated template database (issue 17): a new data dir starts from a copy of it instead of
 * creating the schema statement by statement and switching a fresh file to WAL, which is most of
 * a first `svc run`'s database cost. The template lives in the user's cache dir, named by a hash
 * of the migrations, so a build with other migrations never picks up a stale one; it is written
 * the first time a data dir is created without one. Copies are atomic (a temporary file linked
 * into place, never over an existing database), and the normal migration check still runs on the
 * copy, so a template can only save work, never skip a migration.
 * @module
 */
import { createHash } from 'node:crypto';
import { copyFileSync, existsSync, linkSync, renameSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import type BetterSqlite3 from 'better-sqlite3';
import { makeDirs } from '../util/make-dirs';
import type { Migration } from './migrations/index';
import { loadSqlite } from './sqlite-driver';

/** `<dir>/db-template-<hash of the migrations>.db`. */
export function templatePath(dir: string, migrations: readonly Migration[]): string {
  const hash = createHash('sha256');
  for (const m of [...migrations].sort((a, b) => a.id - b.id)) hash.update(`${m.id}\0${m.sql}\0`);
  return join(dir, `db-template-${hash.digest('hex').slice(0, 16)}.db`);
}

/**
 * Put a copy of the template at `file` when the template exists and `file` does not. Returns
 * whether it did; any failure (no template, a race with another process, a full disk) leaves
 * `file` alone and the caller creates the database as usual.
 */
export function copyTemplate(template: string, file: string): boolean {
  if (!existsSync(template) || existsSync(file)) return false;
  const tmp = `${file}.template-${process.pid}`;
  try {
    copyFileSync(template, tmp);
    if (!readable(tmp)) {
      // A damaged template is dropped (the next new data dir writes a good one), never used.
      rmSync(template, { force: true });
      return false;
    }
    // link fails when `file` appeared meanwhile: another process's database is never replaced.
    linkSync(tmp, file);
    return true;
  } catch {
    return false;
  } finally {
    rmSync(tmp, { force: true });
  }
}

/** The copy is an SQLite database with a migration table (not a truncated or foreign file). */
function readable(path: string): boolean {
  try {
    const Database = loadSqlite();
    const db = new Database(path, { readonly: true, fileMustExist: true });
    try {
      db.prepare('SELECT count(*) FROM schema_migrations').get();
      return true;
    } finally {
      db.close();
    }
  } catch {
    return false;
  }
}

/**
 * Write the template from a freshly migrated database (once per migration set): `VACUUM INTO`
 * a temporary file, switch it to WAL (the mode lives in the file header), then rename it into
 * place. Failures are ignored: the template is only an optimisation.
 */
export function writeTemplate(db: BetterSqlite3.Database, template: string): void {
  if (existsSync(template)) return;
  const tmp = `${template}.${process.pid}.tmp`;
  try {
    makeDirs(join(template, '..'));
    rmSync(tmp, { force: true });
    db.prepare('VACUUM INTO ?').run(tmp);
    const Database = loadSqlite();
    const copy = new Database(tmp);
    copy.pragma('journal_mode = WAL');
    copy.close();
    renameSync(tmp, template);
  } catch {
    rmSync(tmp, { force: true });
  }
}
