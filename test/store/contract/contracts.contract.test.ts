/**
 * Runs the contracts repository's contract (./contracts.contract.ts) on both backends: the SQLite
 * repository and its PostgreSQL twin on a throwaway cluster.
 */
import { describe } from 'vitest';
import { createContractRepository } from '../../../src/contracts/contract-repository';
import { createPostgresContractRepository } from '../../../src/contracts/pg-contract-repository';
import { openDb } from '../../../src/store/db';
import { migratedDatabase, postgresForFile } from '../../helpers/postgres';
import { tmpWorkspace } from '../../helpers/tmp-workspace';
import { contractRepositoryContract } from './contracts.contract';

describe('contracts repository contract on SQLite', () => {
  contractRepositoryContract(async () => {
    const db = openDb({ dataDir: tmpWorkspace() });
    return {
      store: createContractRepository(() => db),
      close: async () => {
        db.close();
      },
    };
  });
});

const pg = postgresForFile();

describe.skipIf(!pg.available)('contracts repository contract on PostgreSQL', () => {
  contractRepositoryContract(async () => {
    const sql = await migratedDatabase(pg.cluster());
    return { store: createPostgresContractRepository({ sql }), close: () => sql.close() };
  });
});
