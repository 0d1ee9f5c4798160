/**
 * What the App says about its store (`/healthz`, `svc doctor`, `get_config_status`): the SQLite
 * file and its schema, or the PostgreSQL store as its monitor last saw it (issue 18).
 * @module
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { SvcError } from '../errors';
import { DB_FILE, schemaVersion } from '../store/db';
import type { DbStatus } from '../tools/core/types';
import type { AppBase } from './base';

/** Why the store cannot be used now (never waits); undefined when it can, and on SQLite. */
export function storeUnavailable(base: AppBase): string | undefined {
  const store = base.store;
  if (store.kind !== 'postgres') return undefined;
  const now = store.monitor.status();
  return now.ok ? undefined : `the PostgreSQL store is unreachable: ${now.reason ?? 'unknown'}`;
}

export function dbStatus(base: AppBase): DbStatus {
  const store = base.store;
  if (store.kind === 'postgres') {
    const now = store.monitor.status();
    const error = storeUnavailable(base);
    return {
      kind: 'postgres',
      path: store.sql.redactedUrl,
      exists: true,
      open: now.ok,
      ...(error ? { error } : {}),
      ...(now.schema_version !== undefined ? { schema_version: now.schema_version } : {}),
    };
  }
  const path = join(base.dataDir, DB_FILE);
  const status: DbStatus = { path, exists: existsSync(path), open: base.hasDb() };
  try {
    const handle = base.hasDb() || status.exists ? base.openDatabase() : undefined;
    if (handle) {
      status.open = true;
      status.schema_version = schemaVersion(handle);
    }
  } catch (error) {
    status.error = SvcError.is(error) ? error.message : String(error);
  }
  return status;
}

/**
 * `dbStatus`, after a probe of the PostgreSQL store when its monitor has not read the schema
 * version yet (a command just started: `svc config show-config-status` printed `schema ?`).
 */
export async function dbStatusChecked(base: AppBase): Promise<DbStatus> {
  const store = base.store;
  if (store.kind === 'postgres' && store.monitor.status().schema_version === undefined) {
    await store.monitor.probe();
  }
  return dbStatus(base);
}
