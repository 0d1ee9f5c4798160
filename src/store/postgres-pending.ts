/**
 * Issue 18 is staged: this svc can connect to PostgreSQL, migrate it and check it, but its domains
 * still run on SQLite. With `[store] url` naming PostgreSQL, every use of the SQLite database is
 * refused with this error, so nothing is written to svc.db by mistake; `svc service start` first
 * connects and migrates (a wrong URL is the error it shows) and then refuses the same way.
 * @module
 */
import { SvcError } from '../errors';
import type { SqlClient } from './postgres/client';
import { redactStoreUrl } from './store-url';

export function postgresNotServed(url: string, migrated?: { version: number }): SvcError {
  const done = migrated ? `connected and migrated it (schema version ${migrated.version}), but ` : '';
  return new SvcError(
    'config_error',
    migrated
      ? `[store] url names PostgreSQL (${redactStoreUrl(url)}): ${done}svc cannot serve from PostgreSQL yet (cluster mode, issue 18, is in progress; see docs/cluster.md). Unset [store] url and SVC_STORE_URL to use the SQLite file in the data dir; svc doctor --store checks the PostgreSQL database. Nothing was written to SQLite`
      : `[store] url names PostgreSQL (${redactStoreUrl(url)}): this part of svc does not run on PostgreSQL yet and needs the SQLite database, which is never opened with a PostgreSQL store (cluster mode, issue 18, is in progress; see docs/cluster.md). Unset [store] url and SVC_STORE_URL to use the SQLite file in the data dir. Nothing was written to SQLite`,
    { details: { reason: 'postgres_not_served', url: redactStoreUrl(url) } },
  );
}

type StoreSettings = {
  url: string;
  pool_size: number;
  statement_timeout_ms: number;
  connect_timeout_ms: number;
};

/**
 * The client an App serves from: connected and migrated (a wrong URL or a schema newer than this
 * binary fails here, clearly); the caller closes it.
 */
export async function connectPostgres(store: StoreSettings): Promise<SqlClient> {
  const [{ createPostgresClient }, { migratePostgres }] = await Promise.all([
    import('./postgres/client'),
    import('./postgres/migrate'),
  ]);
  const sql = await createPostgresClient(store);
  try {
    await migratePostgres(sql);
    return sql;
  } catch (error) {
    await sql.close();
    throw error;
  }
}

/** Connect to the PostgreSQL store and apply its migrations (a wrong URL fails here, clearly). */
export async function preparePostgres(store: StoreSettings): Promise<{ applied: number[]; version: number }> {
  const [{ createPostgresClient }, { migratePostgres }] = await Promise.all([
    import('./postgres/client'),
    import('./postgres/migrate'),
  ]);
  const sql = await createPostgresClient(store);
  try {
    return await migratePostgres(sql);
  } finally {
    await sql.close();
  }
}
