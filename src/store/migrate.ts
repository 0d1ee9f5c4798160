/**
 * The numbered forward-only migrations of svc.db (./migrations/), applied by `openDb` (./db.ts)
 * under one exclusive transaction, so processes opening a new data dir at once migrate it once.
 * @module
 */
import type BetterSqlite3 from 'better-sqlite3';
import { retryBusy } from './busy';
import type { Migration } from './migrations/index';

type Db = BetterSqlite3.Database;

/**
 * Apply the pending migrations. The check and the work happen inside one exclusive transaction,
 * so when several processes open a new data dir at once the first one migrates and the others
 * wait for it, then find nothing left to do (no "table … already exists").
 */
export function migrate(db: Db, migrations: readonly Migration[]): number[] {
  const sorted = [...migrations].sort((a, b) => a.id - b.id);
  // Fast path without the write lock: everything is applied already (every open but the first).
  if (pendingOf(db, sorted)?.length === 0) return [];
  return retryBusy(() =>
    db
      .transaction(() => {
        db.exec(`CREATE TABLE IF NOT EXISTS schema_migrations (
          id INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL)`);
        const pending = pendingOf(db, sorted) ?? sorted;
        const record = db.prepare('INSERT INTO schema_migrations (id, name, applied_at) VALUES (?, ?, ?)');
        for (const m of pending) {
          db.exec(m.sql);
          record.run(m.id, m.name, Date.now());
        }
        return pending.map((m) => m.id);
      })
      .exclusive(),
  );
}

/** The highest migration id applied (0 for a database without any). */
export function schemaVersion(db: Db): number {
  return (db.prepare('SELECT coalesce(max(id), 0) AS v FROM schema_migrations').get() as { v: number }).v;
}

/** Migrations not applied yet, or undefined when the database has no migration table yet. */
function pendingOf(db: Db, sorted: readonly Migration[]): Migration[] | undefined {
  const table = db
    .prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'")
    .get();
  if (!table) return undefined;
  const applied = new Set(
    (db.prepare('SELECT id FROM schema_migrations').all() as { id: number }[]).map((r) => r.id),
  );
  return sorted.filter((m) => !applied.has(m.id));
}
