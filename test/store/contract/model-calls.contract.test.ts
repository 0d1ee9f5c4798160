/**
 * Runs the ModelCallStore contract (./model-calls.contract.ts) on both backends: the SQLite store
 * and the PostgreSQL store on a throwaway cluster.
 */
import { describe } from 'vitest';
import { openDb } from '../../../src/store/db';
import { createModelCallStore } from '../../../src/telemetry/model-call-store';
import { createPostgresModelCallStore } from '../../../src/telemetry/pg-model-call-store';
import { migratedDatabase, postgresForFile } from '../../helpers/postgres';
import { tmpWorkspace } from '../../helpers/tmp-workspace';
import { modelCallsContract } from './model-calls.contract';

describe('ModelCallStore contract on SQLite', () => {
  modelCallsContract(async () => {
    const db = openDb({ dataDir: tmpWorkspace() });
    return {
      store: createModelCallStore(() => db),
      close: async () => {
        db.close();
      },
    };
  });
});

const pg = postgresForFile();

describe.skipIf(!pg.available)('ModelCallStore contract on PostgreSQL', () => {
  modelCallsContract(async () => {
    const sql = await migratedDatabase(pg.cluster());
    return { store: createPostgresModelCallStore({ sql }), close: () => sql.close() };
  });
});
