/**
 * Runs the coordination repositories' contract (./coordination.contract.ts) on both backends. On
 * SQLite the two "nodes" share the connection (one process: its claims serialize on the
 * connection's write transaction); on PostgreSQL they are two pools on one throwaway database.
 */
import { describe } from 'vitest';
import { createClaimRepository } from '../../../src/coordination/claim-repository';
import { createMarkerRepository } from '../../../src/coordination/marker-repository';
import { createPostgresClaimRepository } from '../../../src/coordination/pg-claim-repository';
import { createPostgresMarkerRepository } from '../../../src/coordination/pg-marker-repository';
import { openDb } from '../../../src/store/db';
import { postgresForFile, twoNodes } from '../../helpers/postgres';
import { tmpWorkspace } from '../../helpers/tmp-workspace';
import { coordinationContract } from './coordination.contract';

describe('coordination repositories contract on SQLite', () => {
  coordinationContract(async () => {
    const db = openDb({ dataDir: tmpWorkspace() });
    return {
      claims: createClaimRepository(() => db),
      markers: createMarkerRepository(() => db),
      otherClaims: createClaimRepository(() => db),
      close: async () => {
        db.close();
      },
    };
  });
});

const pg = postgresForFile();

describe.skipIf(!pg.available)('coordination repositories contract on PostgreSQL', () => {
  coordinationContract(async () => {
    const { sql, other: otherSql, close } = await twoNodes(pg.cluster());
    return {
      claims: createPostgresClaimRepository({ sql }),
      markers: createPostgresMarkerRepository({ sql }),
      otherClaims: createPostgresClaimRepository({ sql: otherSql }),
      close,
    };
  });
});
