/**
 * Runs the SessionStore contract (./sessions.contract.ts) on both backends: the SQLite store
 * (through an async adapter) and the PostgreSQL store on a throwaway cluster.
 */
import { describe } from 'vitest';
import { createPostgresSessionStore } from '../../../src/sessions/pg-session-store';
import { createSessionStore } from '../../../src/sessions/session-store';
import { openDb } from '../../../src/store/db';
import { createPostgresClient } from '../../../src/store/postgres/client';
import { migratePostgres } from '../../../src/store/postgres/migrate';
import { postgresForFile } from '../../helpers/postgres';
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
    const sql = await createPostgresClient({
      url: await pg.cluster().createDatabase(),
      pool_size: 4,
      statement_timeout_ms: 30_000,
      connect_timeout_ms: 5_000,
    });
    await migratePostgres(sql);
    return {
      store: createPostgresSessionStore({ sql, clock, ids, bus, workspace: '/w' }),
      close: () => sql.close(),
    };
  });
});
