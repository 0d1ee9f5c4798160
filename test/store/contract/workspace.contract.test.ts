/**
 * Runs the workspace repositories' contract (./workspace.contract.ts) on both backends: the
 * SQLite repositories and their PostgreSQL twins on a throwaway cluster.
 */
import { describe } from 'vitest';
import { openDb } from '../../../src/store/db';
import { createPostgresWorkspaceStores, createSqliteWorkspaceStores } from '../../../src/workspace/stores';
import { migratedDatabase, postgresForFile } from '../../helpers/postgres';
import { tmpWorkspace } from '../../helpers/tmp-workspace';
import { workspaceContract } from './workspace.contract';

describe('workspace repositories contract on SQLite', () => {
  workspaceContract(async () => {
    const db = openDb({ dataDir: tmpWorkspace() });
    return {
      stores: createSqliteWorkspaceStores(() => db),
      close: async () => {
        db.close();
      },
    };
  });
});

const pg = postgresForFile();

describe.skipIf(!pg.available)('workspace repositories contract on PostgreSQL', () => {
  workspaceContract(async () => {
    const sql = await migratedDatabase(pg.cluster());
    return { stores: createPostgresWorkspaceStores({ sql }), close: () => sql.close() };
  });
});
