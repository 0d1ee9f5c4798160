/**
 * The tables the SQLite migrations create (FTS5 and its shadow tables left out) with their columns
 * and declared types, for checking that the PostgreSQL history translates every one.
 * @module
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openDb } from '../../src/store/db';
import type { Migration } from '../../src/store/migrations/types';

/** Table name → column name → declared SQLite type (upper case, '' when none). */
export function sqliteColumns(migrations: readonly Migration[]): Map<string, Map<string, string>> {
  const dir = mkdtempSync(join(tmpdir(), 'svc-tables-'));
  const db = openDb({ dataDir: dir, migrations });
  try {
    const tables = (
      db
        .prepare(
          `SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'
             AND name <> 'schema_migrations' AND (name NOT LIKE 'message_search%' OR name = 'message_search_docs')
           ORDER BY name`,
        )
        .all() as { name: string }[]
    ).map((r) => r.name);
    return new Map(
      tables.map((table) => [
        table,
        new Map(
          (db.prepare(`PRAGMA table_info(${table})`).all() as { name: string; type: string }[]).map((c) => [
            c.name,
            c.type.toUpperCase(),
          ]),
        ),
      ]),
    );
  } finally {
    db.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

export function sqliteTables(migrations: readonly Migration[]): string[] {
  return [...sqliteColumns(migrations).keys()].sort();
}
