/**
 * Runs the RunQueries contract (./run-queries.contract.ts) on both backends: the SQLite reads and
 * writes over one database file, and the PostgreSQL ones on a throwaway cluster.
 */
import { describe } from 'vitest';
import { createPostgresRunQueries } from '../../../src/runs/pg-run-queries';
import { createPostgresRunWrites } from '../../../src/runs/pg-run-write-repository';
import { createRunQueries } from '../../../src/runs/queries';
import { asyncRunWrites, createRunWrites } from '../../../src/runs/run-repository';
import { openDb } from '../../../src/store/db';
import { migratedDatabase, postgresForFile } from '../../helpers/postgres';
import { tmpWorkspace } from '../../helpers/tmp-workspace';
import { runQueriesContract } from './run-queries.contract';

describe('RunQueries contract on SQLite', () => {
  runQueriesContract(async () => {
    const db = openDb({ dataDir: tmpWorkspace() });
    return {
      queries: createRunQueries(() => db),
      writes: asyncRunWrites(
        createRunWrites(
          (text) => db.prepare(text),
          (fn) => db.transaction(fn)(),
        ),
      ),
      addSession: async (id) => {
        db.prepare('INSERT INTO sessions (id, created_at, updated_at) VALUES (?, 1, 1)').run(id);
      },
      close: async () => {
        db.close();
      },
    };
  });
});

const pg = postgresForFile();

describe.skipIf(!pg.available)('RunQueries contract on PostgreSQL', () => {
  runQueriesContract(async () => {
    const sql = await migratedDatabase(pg.cluster());
    return {
      queries: createPostgresRunQueries({ sql }),
      writes: createPostgresRunWrites({ sql }),
      addSession: async (id) => {
        await sql.run('INSERT INTO sessions (id, created_at, updated_at) VALUES ($1, 1, 1)', [id]);
      },
      close: () => sql.close(),
    };
  });
});
