/**
 * Runs the permission grants' contract (./permissions.contract.ts) on both backends. On
 * PostgreSQL `permission_grants.session_id` references `sessions`, so the root sessions exist.
 */
import { describe } from 'vitest';
import {
  createPostgresPermissionStores,
  createSqlitePermissionStores,
} from '../../../src/permissions/stores';
import { openDb } from '../../../src/store/db';
import { migratedDatabase, postgresForFile } from '../../helpers/postgres';
import { tmpWorkspace } from '../../helpers/tmp-workspace';
import { permissionsContract } from './permissions.contract';

const ROOTS = ['root1', 'root2'];

describe('permission grants contract on SQLite', () => {
  permissionsContract(async () => {
    const db = openDb({ dataDir: tmpWorkspace() });
    for (const id of ROOTS)
      db.prepare('INSERT INTO sessions (id, created_at, updated_at) VALUES (?, 1, 1)').run(id);
    return {
      stores: createSqlitePermissionStores(() => db),
      close: async () => {
        db.close();
      },
    };
  });
});

const pg = postgresForFile();

describe.skipIf(!pg.available)('permission grants contract on PostgreSQL', () => {
  permissionsContract(async () => {
    const sql = await migratedDatabase(pg.cluster());
    for (const id of ROOTS)
      await sql.run('INSERT INTO sessions (id, created_at, updated_at) VALUES ($1, 1, 1)', [id]);
    return { stores: createPostgresPermissionStores({ sql }), close: () => sql.close() };
  });
});
