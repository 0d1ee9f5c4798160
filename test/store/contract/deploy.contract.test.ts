/**
 * Runs the deployment repository's contract (./deploy.contract.ts) on both backends: the SQLite
 * repository and its PostgreSQL twin on a throwaway cluster.
 */
import { describe } from 'vitest';
import { createDeploymentRepository } from '../../../src/deploy/deployment-repository';
import { createPostgresDeploymentRepository } from '../../../src/deploy/pg-deployment-repository';
import { openDb } from '../../../src/store/db';
import { migratedDatabase, postgresForFile } from '../../helpers/postgres';
import { tmpWorkspace } from '../../helpers/tmp-workspace';
import { deploymentRepositoryContract } from './deploy.contract';

describe('deployment repository contract on SQLite', () => {
  deploymentRepositoryContract(async () => {
    const db = openDb({ dataDir: tmpWorkspace() });
    return {
      rows: createDeploymentRepository(() => db),
      close: async () => {
        db.close();
      },
    };
  });
});

const pg = postgresForFile();

describe.skipIf(!pg.available)('deployment repository contract on PostgreSQL', () => {
  deploymentRepositoryContract(async () => {
    const sql = await migratedDatabase(pg.cluster());
    return { rows: createPostgresDeploymentRepository({ sql }), close: () => sql.close() };
  });
});
