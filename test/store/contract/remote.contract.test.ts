/**
 * Runs the A2A repositories' contract (./remote.contract.ts) on both backends: the SQLite
 * delegation store and served-task repository, and their PostgreSQL twins on a throwaway cluster.
 */
import { describe } from 'vitest';
import { createPostgresServedTaskRepository } from '../../../src/remote/pg-served-task-repository';
import { createPostgresA2aStore } from '../../../src/remote/pg-task-store';
import { createServedTaskRepository } from '../../../src/remote/served-task-repository';
import { createA2aStore } from '../../../src/remote/task-store';
import { openDb } from '../../../src/store/db';
import { migratedDatabase, postgresForFile } from '../../helpers/postgres';
import { tmpWorkspace } from '../../helpers/tmp-workspace';
import { a2aStoreContract, servedTaskContract } from './remote.contract';

describe('A2A repositories contract on SQLite', () => {
  const sqlite = () => {
    const db = openDb({ dataDir: tmpWorkspace() });
    return {
      db,
      close: async () => {
        db.close();
      },
    };
  };
  a2aStoreContract(async (clock) => {
    const { db, close } = sqlite();
    return { store: createA2aStore({ db: () => db, clock }), close };
  });
  servedTaskContract(async () => {
    const { db, close } = sqlite();
    return { tasks: createServedTaskRepository(() => db), close };
  });
});

const pg = postgresForFile();

describe.skipIf(!pg.available)('A2A repositories contract on PostgreSQL', () => {
  a2aStoreContract(async (clock) => {
    const sql = await migratedDatabase(pg.cluster());
    return { store: createPostgresA2aStore({ sql, clock }), close: () => sql.close() };
  });
  servedTaskContract(async () => {
    const sql = await migratedDatabase(pg.cluster());
    return { tasks: createPostgresServedTaskRepository({ sql }), close: () => sql.close() };
  });
});
