/**
 * Applying the PostgreSQL migration history (./migrations/): the version check and the pending
 * migrations run in one transaction under a transaction-scoped advisory lock, so nodes starting
 * together on a new database migrate it once (the others wait on the lock, then find nothing to
 * do). A database migrated by a newer svc is refused, naming both versions, before anything is
 * written.
 * @module
 */
import { SvcError } from '../../errors';
import type { Migration } from '../migrations/types';
import type { SqlClient, SqlExecutor } from './client';
import { postgresMigrations } from './migrations/index';

/** The advisory lock key every svc node takes while it migrates ('svc' + 1 as an int). */
export const MIGRATION_LOCK = 0x73766301;

export interface MigrateResult {
  /** Ids applied by this call (empty when the database was up to date). */
  applied: number[];
  /** The schema version after the call. */
  version: number;
}

/** The newest migration id this binary knows. */
export function binarySchemaVersion(migrations: readonly Migration[] = postgresMigrations): number {
  return migrations.reduce((max, m) => Math.max(max, m.id), 0);
}

export async function migratePostgres(
  client: SqlClient,
  migrations: readonly Migration[] = postgresMigrations,
): Promise<MigrateResult> {
  const sorted = [...migrations].sort((a, b) => a.id - b.id);
  const known = binarySchemaVersion(sorted);
  // Fast path without the lock: every migration is applied (every start but the first).
  const before = await appliedIds(client);
  if (before) {
    refuseNewer(client, Math.max(0, ...before), known);
    if (sorted.every((m) => before.has(m.id))) return { applied: [], version: Math.max(0, ...before) };
  }
  return client.transaction(async (tx) => {
    await tx.query('SELECT pg_advisory_xact_lock($1)', [MIGRATION_LOCK]);
    await tx.run(
      `CREATE TABLE IF NOT EXISTS schema_migrations (
         id BIGINT PRIMARY KEY, name TEXT NOT NULL, applied_at BIGINT NOT NULL)`,
    );
    const applied = (await appliedIds(tx)) ?? new Set<number>();
    refuseNewer(client, Math.max(0, ...applied), known);
    const pending = sorted.filter((m) => !applied.has(m.id));
    for (const m of pending) {
      await tx.run(m.sql);
      await tx.run('INSERT INTO schema_migrations (id, name, applied_at) VALUES ($1, $2, $3)', [
        m.id,
        m.name,
        Date.now(),
      ]);
    }
    return {
      applied: pending.map((m) => m.id),
      version: Math.max(0, ...applied, ...pending.map((m) => m.id)),
    };
  });
}

/** The highest migration id applied (0 for a database svc has not migrated). */
export async function postgresSchemaVersion(client: SqlExecutor): Promise<number> {
  const ids = await appliedIds(client);
  return ids ? Math.max(0, ...ids) : 0;
}

async function appliedIds(client: SqlExecutor): Promise<Set<number> | undefined> {
  const table = await client.one<{ name: string | null }>(
    "SELECT to_regclass('schema_migrations')::text AS name",
  );
  if (!table?.name) return undefined;
  const rows = await client.query<{ id: number }>('SELECT id FROM schema_migrations');
  return new Set(rows.map((row) => Number(row.id)));
}

function refuseNewer(client: SqlClient, applied: number, known: number): void {
  if (applied <= known) return;
  const { host, port, database } = client.target;
  throw new SvcError(
    'unavailable',
    `database "${database}" at ${host}:${port} has schema version ${applied}, newer than this svc knows (${known}); it was migrated by a newer svc: upgrade svc on this node. Nothing was written`,
    {
      details: {
        host,
        port,
        database,
        schema_version: applied,
        binary_schema_version: known,
        reason: 'schema_newer',
      },
    },
  );
}
