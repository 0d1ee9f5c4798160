/**
 * Runs the observe stores' contract (./observe.contract.ts) on both backends: the SQLite stores and
 * their PostgreSQL twins on a throwaway cluster.
 */
import { describe } from 'vitest';
import { createPostgresObserveStores, createSqliteObserveStores } from '../../../src/observe/stores';
import { openDb } from '../../../src/store/db';
import { migratedDatabase, postgresForFile } from '../../helpers/postgres';
import { tmpWorkspace } from '../../helpers/tmp-workspace';
import { observeStoresContract } from './observe.contract';

describe('observe stores contract on SQLite', () => {
  observeStoresContract(async () => {
    const db = openDb({ dataDir: tmpWorkspace() });
    return {
      stores: createSqliteObserveStores(() => db),
      close: async () => {
        db.close();
      },
    };
  });
});

const pg = postgresForFile();

describe.skipIf(!pg.available)('observe stores contract on PostgreSQL', () => {
  observeStoresContract(async () => {
    const sql = await migratedDatabase(pg.cluster());
    return { stores: createPostgresObserveStores({ sql }), close: () => sql.close() };
  });
});
