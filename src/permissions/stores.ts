/**
 * The permission service's repositories, handed to `createPermissionService` so the app picks the
 * backend: SQLite (the default) or the PostgreSQL twins (issue 18).
 * @module
 */
import type { Db } from '../store/db';
import type { SqlClient } from '../store/postgres/client';
import { createGrantQueries, type GrantQueries } from './grant-queries';
import { createGrantRepository, type GrantRepository } from './grant-repository';
import type { PermissionRequestRepository } from './permission-request-repository';
import { createPostgresGrantQueries, createPostgresGrantRepository } from './pg-grant-repository';
import { createPostgresPermissionRequestRepository } from './pg-permission-request-repository';

export interface PermissionStores {
  /** One session family's `permission_grants`. */
  grants: GrantRepository;
  /** Every session's grants (the enforcement readout). */
  grantQueries: GrantQueries;
  /**
   * The pending requests of runs as rows (PostgreSQL only, issue 19 item 4): any node lists and
   * answers them, a resumed run waits for the same one. Absent (SQLite): a wait in this process.
   */
  requests?: PermissionRequestRepository;
}

export function createSqlitePermissionStores(db: () => Db): PermissionStores {
  return { grants: createGrantRepository(db), grantQueries: createGrantQueries(db) };
}

export function createPostgresPermissionStores(deps: { sql: SqlClient }): PermissionStores {
  return {
    grants: createPostgresGrantRepository(deps),
    grantQueries: createPostgresGrantQueries(deps),
    requests: createPostgresPermissionRequestRepository(deps),
  };
}
