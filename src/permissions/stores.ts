/**
 * The permission service's repositories, handed to `createPermissionService` so the app picks the
 * backend: SQLite (the default) or the PostgreSQL twins (issue 18).
 * @module
 */
import type { Db } from '../store/db';
import type { SqlClient } from '../store/postgres/client';
import { createGrantQueries, type GrantQueries } from './grant-queries';
import { createGrantRepository, type GrantRepository } from './grant-repository';
import { createPostgresGrantQueries, createPostgresGrantRepository } from './pg-grant-repository';

export interface PermissionStores {
  /** One session family's `permission_grants`. */
  grants: GrantRepository;
  /** Every session's grants (the enforcement readout). */
  grantQueries: GrantQueries;
}

export function createSqlitePermissionStores(db: () => Db): PermissionStores {
  return { grants: createGrantRepository(db), grantQueries: createGrantQueries(db) };
}

export function createPostgresPermissionStores(deps: { sql: SqlClient }): PermissionStores {
  return { grants: createPostgresGrantRepository(deps), grantQueries: createPostgresGrantQueries(deps) };
}
