/**
 * Runs the health activation store's contract (./health.contract.ts) on both backends: the SQLite
 * repository and its PostgreSQL twin on a throwaway cluster.
 */
import { describe } from 'vitest';
import { createActivationStore } from '../../../src/health/activation-store';
import { createPostgresActivationStore } from '../../../src/health/pg-activation-store';
import { openDb } from '../../../src/store/db';
import { migratedDatabase, postgresForFile } from '../../helpers/postgres';
import { tmpWorkspace } from '../../helpers/tmp-workspace';
import { activationStoreContract } from './health.contract';

describe('health activation store contract on SQLite', () => {
  activationStoreContract(async () => {
    const db = openDb({ dataDir: tmpWorkspace() });
    return {
      store: createActivationStore(() => db),
      close: async () => {
        db.close();
      },
    };
  });
});

const pg = postgresForFile();

describe.skipIf(!pg.available)('health activation store contract on PostgreSQL', () => {
  activationStoreContract(async () => {
    const sql = await migratedDatabase(pg.cluster());
    return { store: createPostgresActivationStore({ sql }), close: () => sql.close() };
  });
});
