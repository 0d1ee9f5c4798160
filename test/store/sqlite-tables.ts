/**
 * The tables the SQLite migrations create (FTS5 and its shadow tables left out), for checking that
 * the PostgreSQL history creates the same set.
 * @module
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openDb } from '../../src/store/db';
import type { Migration } from '../../src/store/migrations/types';

export function sqliteTables(migrations: readonly Migration[]): string[] {
  const dir = mkdtempSync(join(tmpdir(), 'svc-tables-'));
  const db = openDb({ dataDir: dir, migrations });
  try {
    return (
      db
        .prepare(
          `SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'
             AND name <> 'schema_migrations' AND name NOT LIKE 'message_search%' ORDER BY name`,
        )
        .all() as { name: string }[]
    )
      .map((r) => r.name)
      .concat('message_search_docs')
      .sort();
  } finally {
    db.close();
    rmSync(dir, { recursive: true, force: true });
  }
}
