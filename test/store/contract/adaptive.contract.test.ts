/**
 * Runs the adaptive orchestration store's contract (./adaptive.contract.ts) on both backends. The
 * tables reference `sessions`, so the sessions exist.
 */
import { describe } from 'vitest';
import { createPostgresAdaptiveStore } from '../../../src/adaptive/pg-adaptive-store';
import { createAdaptiveStore } from '../../../src/adaptive/store';
import { openDb } from '../../../src/store/db';
import { migratedDatabase, postgresForFile } from '../../helpers/postgres';
import { tmpWorkspace } from '../../helpers/tmp-workspace';
import { ADAPTIVE_SESSIONS, adaptiveStoreContract } from './adaptive.contract';

describe('adaptive orchestration store contract on SQLite', () => {
  adaptiveStoreContract(async () => {
    const db = openDb({ dataDir: tmpWorkspace() });
    for (const id of ADAPTIVE_SESSIONS)
      db.prepare('INSERT INTO sessions (id, created_at, updated_at) VALUES (?, 1, 1)').run(id);
    return {
      store: createAdaptiveStore(() => db),
      close: async () => {
        db.close();
      },
    };
  });
});

const pg = postgresForFile();

describe.skipIf(!pg.available)('adaptive orchestration store contract on PostgreSQL', () => {
  adaptiveStoreContract(async () => {
    const sql = await migratedDatabase(pg.cluster());
    for (const id of ADAPTIVE_SESSIONS)
      await sql.run('INSERT INTO sessions (id, created_at, updated_at) VALUES ($1, 1, 1)', [id]);
    return { store: createPostgresAdaptiveStore({ sql }), close: () => sql.close() };
  });
});
