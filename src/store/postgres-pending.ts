/**
 * Issue 18 is staged: this svc can connect to PostgreSQL, migrate it and check it, but its domains
 * still run on SQLite. With `[store] url` naming PostgreSQL, every use of the SQLite database is
 * refused with this error, so nothing is written to svc.db by mistake; `svc service start` first
 * connects and migrates (a wrong URL is the error it shows) and then refuses the same way.
 * @module
 */
import { SvcError } from '../errors';
import { redactStoreUrl } from './store-url';

export function postgresNotServed(url: string, migrated?: { version: number }): SvcError {
  const done = migrated ? `connected and migrated it (schema version ${migrated.version}), but ` : '';
  return new SvcError(
    'config_error',
    `[store] url names PostgreSQL (${redactStoreUrl(url)}): ${done}svc cannot serve from PostgreSQL yet (cluster mode, issue 18, is in progress; see docs/cluster.md). Unset [store] url and SVC_STORE_URL to use the SQLite file in the data dir; svc doctor --store checks the PostgreSQL database. Nothing was written to SQLite`,
    { details: { reason: 'postgres_not_served', url: redactStoreUrl(url) } },
  );
}

/** Connect to the PostgreSQL store and apply its migrations (a wrong URL fails here, clearly). */
export async function preparePostgres(store: {
  url: string;
  pool_size: number;
  statement_timeout_ms: number;
  connect_timeout_ms: number;
}): Promise<{ applied: number[]; version: number }> {
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
