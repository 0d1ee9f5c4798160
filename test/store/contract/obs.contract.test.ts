/**
 * Runs the read models' query bundle contract (./obs.contract.ts) on both backends: the SQLite
 * queries and their PostgreSQL twins on a throwaway cluster.
 */
import { describe } from 'vitest';
import {
  createPostgresReadModelQueries,
  createSqliteReadModelQueries,
} from '../../../src/observe/read-model-queries';
import { openDb } from '../../../src/store/db';
import { migratedDatabase, postgresForFile } from '../../helpers/postgres';
import { tmpWorkspace } from '../../helpers/tmp-workspace';
import { obsContract } from './obs.contract';

describe('Read model queries contract on SQLite', () => {
  obsContract(async () => {
    const db = openDb({ dataDir: tmpWorkspace() });
    return {
      queries: createSqliteReadModelQueries(() => db),
      exec: async (statement, params) => {
        db.prepare(statement).run(...params);
      },
      close: async () => {
        db.close();
      },
    };
  });
});

const pg = postgresForFile();

describe.skipIf(!pg.available)('Read model queries contract on PostgreSQL', () => {
  obsContract(async () => {
    const sql = await migratedDatabase(pg.cluster());
    return {
      queries: createPostgresReadModelQueries({ sql }),
      exec: async (statement, params) => {
        let n = 0;
        await sql.run(
          statement.replace(/\?/g, () => `$${++n}`),
          params,
        );
      },
      close: () => sql.close(),
    };
  });
});
