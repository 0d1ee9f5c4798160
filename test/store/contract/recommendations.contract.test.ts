/**
 * Runs the recommendation ledger repository's contract (./recommendations.contract.ts) on both
 * backends: the SQLite repository and its PostgreSQL twin on a throwaway cluster.
 */
import { describe } from 'vitest';
import { createPostgresRecommendationRepository } from '../../../src/readouts/cognition/pg-recommendation-store';
import { createRecommendationRepository } from '../../../src/readouts/cognition/recommendation-store';
import { openDb } from '../../../src/store/db';
import { createIds } from '../../../src/util/ids';
import { testClock } from '../../helpers/make-test-app';
import { migratedDatabase, postgresForFile } from '../../helpers/postgres';
import { tmpWorkspace } from '../../helpers/tmp-workspace';
import { recommendationsContract } from './recommendations.contract';

describe('recommendation ledger contract on SQLite', () => {
  recommendationsContract(async () => {
    const db = openDb({ dataDir: tmpWorkspace() });
    const clock = testClock();
    return {
      store: createRecommendationRepository({ db: () => db, clock, ids: createIds(clock) }),
      clock,
      close: async () => {
        db.close();
      },
    };
  });
});

const pg = postgresForFile();

describe.skipIf(!pg.available)('recommendation ledger contract on PostgreSQL', () => {
  recommendationsContract(async () => {
    const sql = await migratedDatabase(pg.cluster());
    const clock = testClock();
    return {
      store: createPostgresRecommendationRepository({ sql, clock, ids: createIds(clock) }),
      clock,
      close: () => sql.close(),
    };
  });
});
