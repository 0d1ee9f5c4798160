/**
 * `svc doctor --store` and `/healthz`'s view of the store (issue 18): which backend, where, can
 * svc reach it, which schema version it holds against the one this binary knows. For PostgreSQL:
 * the redacted URL, a round trip, the server version, and whether it is the primary or a standby
 * (with its replay lag). Nothing is written or migrated; the pg driver loads only for a postgres
 * URL.
 * @module
 */
import type { StoreConfig } from '../config/schema';
import { SvcError } from '../errors';
import { checkDatabase } from './integrity';
import { migrations as sqliteMigrations } from './migrations/index';
import { isPostgresUrl, redactStoreUrl } from './store-url';

export interface StoreCheck {
  kind: 'sqlite' | 'postgres';
  ok: boolean;
  /** The SQLite file, or the PostgreSQL URL with its password masked. */
  location: string;
  schema_version: number | null;
  binary_schema_version: number;
  /** PostgreSQL: `SELECT 1` round trip in ms. */
  round_trip_ms?: number;
  server_version?: string;
  /** PostgreSQL: primary, or standby with its replay lag. */
  role?: 'primary' | 'standby';
  replication_lag_ms?: number | null;
  /** What is wrong, or what happens next (pending migrations), when there is something to say. */
  detail?: string;
}

export async function checkStore(store: StoreConfig, dataDir: string): Promise<StoreCheck> {
  if (isPostgresUrl(store.url)) return checkPostgres({ ...store, url: store.url });
  const db = checkDatabase(dataDir);
  const binary = maxId(sqliteMigrations);
  const ok = db.integrity === 'ok' || db.integrity === 'missing';
  return {
    kind: 'sqlite',
    ok: ok && (db.integrity === 'missing' || db.writable),
    location: db.path,
    schema_version: db.schema_version,
    binary_schema_version: binary,
    ...(db.advice ? { detail: db.advice } : {}),
  };
}

async function checkPostgres(store: StoreConfig & { url: string }): Promise<StoreCheck> {
  const [{ createPostgresClient }, { binarySchemaVersion, postgresSchemaVersion }] = await Promise.all([
    import('./postgres/client'),
    import('./postgres/migrate'),
  ]);
  const out: StoreCheck = {
    kind: 'postgres',
    ok: false,
    location: redactStoreUrl(store.url),
    schema_version: null,
    binary_schema_version: binarySchemaVersion(),
  };
  const sql = await createPostgresClient(store);
  try {
    const started = performance.now();
    await sql.one('SELECT 1');
    out.round_trip_ms = Math.round((performance.now() - started) * 100) / 100;
    out.server_version = (await sql.one<{ v: string }>("SELECT current_setting('server_version') AS v"))?.v;
    out.schema_version = await postgresSchemaVersion(sql);
    const standby = await sql.one<{ standby: boolean; lag_ms: number | null }>(
      `SELECT pg_is_in_recovery() AS standby,
              (extract(epoch FROM now() - pg_last_xact_replay_timestamp()) * 1000)::float8 AS lag_ms`,
    );
    out.role = standby?.standby ? 'standby' : 'primary';
    if (standby?.standby)
      out.replication_lag_ms = standby.lag_ms === null ? null : Math.round(standby.lag_ms);
    out.ok = out.schema_version <= out.binary_schema_version;
    if (out.schema_version > out.binary_schema_version)
      out.detail = `schema version ${out.schema_version} is newer than this svc knows (${out.binary_schema_version}): upgrade svc`;
    else if (out.schema_version < out.binary_schema_version)
      out.detail = `${out.binary_schema_version - out.schema_version} migration(s) pending: applied when svc service start runs`;
  } catch (error) {
    out.detail = SvcError.is(error) ? error.message : String(error);
  } finally {
    await sql.close();
  }
  return out;
}

const maxId = (list: readonly { id: number }[]) => list.reduce((max, m) => Math.max(max, m.id), 0);
