/**
 * Runs the quality repositories' contract (./quality.contract.ts) on both backends: SQLite (the
 * app database, opened for reads as for writes) and the PostgreSQL twins on a throwaway cluster.
 */
import { describe } from 'vitest';
import { createPostgresQualityStores, createSqliteQualityStores } from '../../../src/quality/stores';
import { openDb } from '../../../src/store/db';
import { migratedDatabase, postgresForFile } from '../../helpers/postgres';
import { tmpWorkspace } from '../../helpers/tmp-workspace';
import { qualityContract } from './quality.contract';

describe('quality repositories contract on SQLite', () => {
  qualityContract(async () => {
    const db = openDb({ dataDir: tmpWorkspace() });
    return {
      stores: createSqliteQualityStores({ write: () => db, read: () => db }),
      close: async () => {
        db.close();
      },
    };
  });
});

const pg = postgresForFile();

describe.skipIf(!pg.available)('quality repositories contract on PostgreSQL', () => {
  qualityContract(async () => {
    const sql = await migratedDatabase(pg.cluster());
    return { stores: createPostgresQualityStores({ sql }), close: () => sql.close() };
  });
});
