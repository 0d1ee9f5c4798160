/**
 * Runs the daemons' storage contract (./daemons.contract.ts) on SQLite and on a throwaway
 * PostgreSQL database.
 */
import { describe } from 'vitest';
import { createDaemonRepository } from '../../../src/scheduler/daemon-repository';
import { createPostgresDaemonRepository } from '../../../src/scheduler/pg-daemon-repository';
import { openDb } from '../../../src/store/db';
import { migratedDatabase, postgresForFile } from '../../helpers/postgres';
import { tmpWorkspace } from '../../helpers/tmp-workspace';
import { daemonsContract } from './daemons.contract';

describe('daemons storage contract on SQLite', () => {
  daemonsContract(async () => {
    const db = openDb({ dataDir: tmpWorkspace() });
    return {
      rows: createDaemonRepository(() => db),
      close: async () => {
        db.close();
      },
    };
  });
});

const pg = postgresForFile();

describe.skipIf(!pg.available)('daemons storage contract on PostgreSQL', () => {
  daemonsContract(async () => {
    const sql = await migratedDatabase(pg.cluster());
    return { rows: createPostgresDaemonRepository({ sql }), close: () => sql.close() };
  });
});
