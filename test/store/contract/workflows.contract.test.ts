/**
 * Runs the workflow stores' contract (./workflows.contract.ts) on both backends: the SQLite stores
 * and their PostgreSQL twins on a throwaway cluster.
 */
import { describe } from 'vitest';
import { openDb } from '../../../src/store/db';
import { createSequentialIds } from '../../../src/util/ids';
import { createPostgresWorkflowStores, createSqliteWorkflowStores } from '../../../src/workflows/stores';
import { migratedDatabase, postgresForFile } from '../../helpers/postgres';
import { tmpWorkspace } from '../../helpers/tmp-workspace';
import { workflowStoresContract } from './workflows.contract';

const manualClock = () => {
  let now = 1000;
  return {
    clock: { now: () => now },
    tick: (ms: number) => {
      now += ms;
    },
  };
};

describe('workflow stores contract on SQLite', () => {
  workflowStoresContract(async () => {
    const db = openDb({ dataDir: tmpWorkspace() });
    const { clock, tick } = manualClock();
    return {
      stores: createSqliteWorkflowStores({ db: () => db, clock, ids: createSequentialIds() }),
      tick,
      close: async () => {
        db.close();
      },
    };
  });
});

const pg = postgresForFile();

describe.skipIf(!pg.available)('workflow stores contract on PostgreSQL', () => {
  workflowStoresContract(async () => {
    const sql = await migratedDatabase(pg.cluster());
    const { clock, tick } = manualClock();
    return {
      stores: createPostgresWorkflowStores({ sql, clock, ids: createSequentialIds() }),
      tick,
      close: () => sql.close(),
    };
  });
});
