/**
 * Runs the scheduler's storage contract (./scheduler.contract.ts) on both backends: two SQLite
 * handles on one file (two processes), and two PostgreSQL pools on one throwaway database (two
 * nodes).
 */
import { describe } from 'vitest';
import { createPostgresScheduleStore } from '../../../src/scheduler/pg-schedule-store';
import { createScheduleStore } from '../../../src/scheduler/schedule-store';
import { openDb } from '../../../src/store/db';
import { createPostgresClient } from '../../../src/store/postgres/client';
import { migratePostgres } from '../../../src/store/postgres/migrate';
import { postgresForFile } from '../../helpers/postgres';
import { tmpWorkspace } from '../../helpers/tmp-workspace';
import { schedulerContract } from './scheduler.contract';

describe('scheduler storage contract on SQLite', () => {
  schedulerContract(async ({ clock, ids }) => {
    const dataDir = tmpWorkspace();
    const db = openDb({ dataDir });
    const second = openDb({ dataDir });
    return {
      store: createScheduleStore({ db: () => db, clock, ids }),
      other: createScheduleStore({ db: () => second, clock, ids }),
      close: async () => {
        second.close();
        db.close();
      },
    };
  });
});

const pg = postgresForFile();

describe.skipIf(!pg.available)('scheduler storage contract on PostgreSQL', () => {
  schedulerContract(async ({ clock, ids }) => {
    const url = await pg.cluster().createDatabase();
    const node = () =>
      createPostgresClient({ url, pool_size: 4, statement_timeout_ms: 30_000, connect_timeout_ms: 5_000 });
    const sql = await node();
    await migratePostgres(sql);
    const otherSql = await node();
    return {
      store: createPostgresScheduleStore({ sql, clock, ids }),
      other: createPostgresScheduleStore({ sql: otherSql, clock, ids }),
      close: async () => {
        await otherSql.close();
        await sql.close();
      },
    };
  });
});
