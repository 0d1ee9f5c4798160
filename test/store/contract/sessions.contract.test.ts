/**
 * Runs the SessionStore contract (./sessions.contract.ts) on both backends: the SQLite store
 * (through an async adapter) and the PostgreSQL store on a throwaway cluster.
 */
import { describe } from 'vitest';
import { createPostgresSessionStore } from '../../../src/sessions/pg-session-store';
import { createSessionStore } from '../../../src/sessions/session-store';
import { openDb } from '../../../src/store/db';
import { migratedDatabase, postgresForFile } from '../../helpers/postgres';
import { tmpWorkspace } from '../../helpers/tmp-workspace';
import { asyncSessionStore } from './async-session-store';
import { sessionStoreContract } from './sessions.contract';

describe('SessionStore contract on SQLite', () => {
  sessionStoreContract(async ({ clock, ids, bus }) => {
    const db = openDb({ dataDir: tmpWorkspace() });
    const store = createSessionStore({ db: () => db, clock, ids, bus, workspace: '/w' });
    return {
      store: asyncSessionStore(store),
      close: async () => {
        db.close();
      },
    };
  });
});

const pg = postgresForFile();

describe.skipIf(!pg.available)('SessionStore contract on PostgreSQL', () => {
  sessionStoreContract(async ({ clock, ids, bus }) => {
    const sql = await migratedDatabase(pg.cluster());
    return {
      store: createPostgresSessionStore({ sql, clock, ids, bus, workspace: '/w' }),
      close: () => sql.close(),
    };
  });
});
