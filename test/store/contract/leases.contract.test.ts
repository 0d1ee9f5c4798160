/**
 * Runs the workspace lease contract (./leases.contract.ts) on both backends: two SQLite handles on
 * one file (two processes), and two PostgreSQL pools on one throwaway database (two nodes).
 */
import { describe } from 'vitest';
import { openDb } from '../../../src/store/db';
import { createLeaseRepository } from '../../../src/workspace/lease-repository';
import { createPostgresLeaseRepository } from '../../../src/workspace/pg-lease-repository';
import { postgresForFile, twoNodes } from '../../helpers/postgres';
import { tmpWorkspace } from '../../helpers/tmp-workspace';
import { leasesContract } from './leases.contract';

describe('Workspace lease contract on SQLite', () => {
  leasesContract(async () => {
    const dataDir = tmpWorkspace();
    const db = openDb({ dataDir });
    const second = openDb({ dataDir });
    return {
      repo: createLeaseRepository(() => db),
      other: createLeaseRepository(() => second),
      close: async () => {
        second.close();
        db.close();
      },
    };
  });
});

const pg = postgresForFile();

describe.skipIf(!pg.available)('Workspace lease contract on PostgreSQL', () => {
  leasesContract(async () => {
    const { sql, other, close } = await twoNodes(pg.cluster());
    return {
      repo: createPostgresLeaseRepository({ sql }),
      other: createPostgresLeaseRepository({ sql: other }),
      close,
    };
  });
});
