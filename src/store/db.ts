/**
 * SQLite via better-sqlite3: WAL, foreign keys, a busy timeout, and numbered forward-only
 * migrations applied at open inside one transaction. A locked, read-only or corrupt database is a
 * clear error, never a silent reset.
 * @module
 */
import { accessSync, constants, existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import type BetterSqlite3 from 'better-sqlite3';
import { SvcError } from '../errors';
import { ensureDataDir } from './data-dir';
import { migrations as allMigrations, type Migration } from './migrations/index';

export type Db = BetterSqlite3.Database;

/**
 * Run synchronous writes in one transaction (one commit instead of one per statement; nested
 * calls become savepoints). The commit happens before this returns, so the rows are as durable as
 * when written one by one. When the database cannot be opened the writes run as they are and fail
 * (or not) on their own, with their own messages.
 */
export function atomically<T>(db: () => Db, fn: () => T): T {
  let handle: Db;
  try {
    handle = db();
  } catch {
    return fn();
  }
  return handle.transaction(fn)();
}

export interface OpenDbOptions {
  dataDir: string;
  /** Defaults to the full list; tests pass a prefix to build an "old" database. */
  migrations?: readonly Migration[];
  readonly?: boolean;
  busyTimeoutMs?: number;
}

export const DB_FILE = 'svc.db';

export function openDb(options: OpenDbOptions): Db {
  const file = join(options.dataDir, DB_FILE);
  if (!options.readonly) {
    try {
      ensureDataDir(options.dataDir);
      accessSync(options.dataDir, constants.W_OK);
    } catch (error) {
      throw new SvcError(
        'unavailable',
        `data dir ${options.dataDir} is not writable (${(error as NodeJS.ErrnoException).code ?? 'error'}); pass --data-dir or set SVC_DATA_DIR to a writable directory`,
        { cause: error },
      );
    }
  }
  const require = createRequire(import.meta.url);
  const Database = require('better-sqlite3') as typeof BetterSqlite3;
  let db: Db;
  try {
    if (options.readonly && !existsSync(file)) throw new SvcError('not_found', `no database at ${file}`);
    db = new Database(file, {
      readonly: options.readonly ?? false,
      fileMustExist: options.readonly ?? false,
    });
  } catch (error) {
    throw dbError(error, file);
  }
  try {
    db.pragma(`busy_timeout = ${options.busyTimeoutMs ?? 5000}`);
    if (!options.readonly) db.pragma('journal_mode = WAL');
    db.pragma('foreign_keys = ON');
    db.pragma('synchronous = NORMAL');
    // Reading the schema is the cheapest way to find out the file is not a database at all.
    db.prepare('SELECT count(*) FROM sqlite_master').get();
    if (!options.readonly) migrate(db, options.migrations ?? allMigrations);
  } catch (error) {
    db.close();
    throw dbError(error, file);
  }
  cacheStatements(db);
  return db;
}

/**
 * Domains write `db.prepare(sql).run(…)` inline; compiling the same SQL on every call showed up
 * in profiles of busy servers. Statements are cached per SQL text. Safe because nothing here
 * iterates a statement (`.iterate()`) or changes its mode (`.pluck()`, `.raw()`, `.expand()`),
 * so a cached statement is never busy or left in another mode when it is reused.
 */
function cacheStatements(db: Db): void {
  const prepare = db.prepare.bind(db);
  const cache = new Map<string, ReturnType<Db['prepare']>>();
  db.prepare = ((sql: string) => {
    let statement = cache.get(sql);
    if (!statement) {
      statement = prepare(sql);
      if (cache.size < 2000) cache.set(sql, statement);
    }
    return statement;
  }) as Db['prepare'];
}

export function migrate(db: Db, migrations: readonly Migration[]): number[] {
  db.exec(`CREATE TABLE IF NOT EXISTS schema_migrations (
    id INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL)`);
  const applied = new Set(
    (db.prepare('SELECT id FROM schema_migrations').all() as { id: number }[]).map((r) => r.id),
  );
  const pending = [...migrations].sort((a, b) => a.id - b.id).filter((m) => !applied.has(m.id));
  if (pending.length === 0) return [];
  const record = db.prepare('INSERT INTO schema_migrations (id, name, applied_at) VALUES (?, ?, ?)');
  db.transaction(() => {
    for (const m of pending) {
      db.exec(m.sql);
      record.run(m.id, m.name, Date.now());
    }
  }).immediate();
  return pending.map((m) => m.id);
}

function dbError(error: unknown, file: string): SvcError {
  if (SvcError.is(error)) return error;
  const code = (error as { code?: string }).code ?? '';
  const message = (error as Error).message ?? String(error);
  if (code === 'SQLITE_BUSY' || code === 'SQLITE_LOCKED' || /locked/i.test(message)) {
    return new SvcError(
      'unavailable',
      `database ${file} is locked by another process; try again when it finishes`,
      { cause: error },
    );
  }
  if (
    code === 'SQLITE_READONLY' ||
    code === 'SQLITE_CANTOPEN' ||
    /readonly|read-only|unable to open/i.test(message)
  ) {
    return new SvcError(
      'unavailable',
      `database ${file} cannot be opened for writing (${code || message}); check its permissions or pass --data-dir`,
      { cause: error },
    );
  }
  if (code === 'SQLITE_NOTADB' || code === 'SQLITE_CORRUPT' || /not a database|malformed/i.test(message)) {
    return new SvcError(
      'unavailable',
      `database ${file} is corrupt or not an SQLite database; it was left untouched (move it aside to start fresh)`,
      { cause: error },
    );
  }
  return new SvcError('unavailable', `database ${file}: ${message}`, { cause: error });
}
