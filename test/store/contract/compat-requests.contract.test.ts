/**
 * Runs the compat request ledger contract (./compat-requests.contract.ts) on both backends:
 * SQLite and PostgreSQL on a throwaway cluster.
 */
import { describe } from 'vitest';
import { createCompatRequestRepository } from '../../../src/runs/compat-request-repository';
import { createPostgresCompatRequestRepository } from '../../../src/runs/pg-compat-request-repository';
import { openDb } from '../../../src/store/db';
import { migratedDatabase, postgresForFile } from '../../helpers/postgres';
import { tmpWorkspace } from '../../helpers/tmp-workspace';
import { compatRequestsContract } from './compat-requests.contract';

const SESSION = 'INSERT INTO sessions (id, created_at, updated_at) VALUES ($1, 1, 1)';
const RUN = `INSERT INTO agent_runs (id, session_id, family_session_id, status, agent, origin, prompt, options, created_at, updated_at)
  VALUES ($1, 's1', 's1', 'queued', 'build', 'openai_compat', 'hi', '{}', 1, 1)`;

describe('Compat request ledger contract on SQLite', () => {
  compatRequestsContract(async () => {
    const db = openDb({ dataDir: tmpWorkspace() });
    const sqlite = (text: string) => text.replace(/\$\d/g, '?');
    return {
      requests: createCompatRequestRepository(() => db),
      addRuns: async (ids) => {
        db.prepare(sqlite(SESSION)).run('s1');
        for (const id of ids) db.prepare(sqlite(RUN)).run(id);
      },
      close: async () => {
        db.close();
      },
    };
  });
});

const pg = postgresForFile();

describe.skipIf(!pg.available)('Compat request ledger contract on PostgreSQL', () => {
  compatRequestsContract(async () => {
    const sql = await migratedDatabase(pg.cluster());
    return {
      requests: createPostgresCompatRequestRepository({ sql }),
      addRuns: async (ids) => {
        await sql.run(SESSION, ['s1']);
        for (const id of ids) await sql.run(RUN, [id]);
      },
      close: () => sql.close(),
    };
  });
});
