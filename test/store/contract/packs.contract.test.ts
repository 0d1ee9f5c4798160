/**
 * Runs the operating packs' store contract (./packs.contract.ts) on both backends. Both tables
 * reference `sessions` on PostgreSQL, so the sessions exist.
 */
import { describe } from 'vitest';
import { createHookRunQueries } from '../../../src/packs/hook-run-queries';
import { createPostgresHookRunQueries } from '../../../src/packs/pg-hook-run-queries';
import { createPostgresPackStore } from '../../../src/packs/pg-store';
import { createPackStore } from '../../../src/packs/store';
import { openDb } from '../../../src/store/db';
import { migratedDatabase, postgresForFile } from '../../helpers/postgres';
import { tmpWorkspace } from '../../helpers/tmp-workspace';
import { PACK_SESSIONS, packsContract } from './packs.contract';

describe('operating packs store contract on SQLite', () => {
  packsContract(async () => {
    const db = openDb({ dataDir: tmpWorkspace() });
    for (const id of PACK_SESSIONS)
      db.prepare('INSERT INTO sessions (id, created_at, updated_at) VALUES (?, 1, 1)').run(id);
    return {
      store: createPackStore(() => db),
      queries: createHookRunQueries(() => db),
      damage: async (id) => {
        db.prepare("UPDATE session_operating_packs SET summary = 'nope' WHERE session_id = ?").run(id);
      },
      close: async () => {
        db.close();
      },
    };
  });
});

const pg = postgresForFile();

describe.skipIf(!pg.available)('operating packs store contract on PostgreSQL', () => {
  packsContract(async () => {
    const sql = await migratedDatabase(pg.cluster());
    for (const id of PACK_SESSIONS)
      await sql.run('INSERT INTO sessions (id, created_at, updated_at) VALUES ($1, 1, 1)', [id]);
    return {
      store: createPostgresPackStore({ sql }),
      queries: createPostgresHookRunQueries({ sql }),
      damage: async (id) => {
        await sql.run("UPDATE session_operating_packs SET summary = 'nope' WHERE session_id = $1", [id]);
      },
      close: () => sql.close(),
    };
  });
});
