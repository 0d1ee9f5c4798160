/**
 * Runs the ProcessRepository contract (./processes.contract.ts) on both backends: SQLite and
 * PostgreSQL on a throwaway cluster.
 */
import { describe } from 'vitest';
import { createPostgresProcessRepository } from '../../../src/runs/pg-process-repository';
import { createProcessRepository } from '../../../src/runs/process-repository';
import { openDb } from '../../../src/store/db';
import { migratedDatabase, postgresForFile } from '../../helpers/postgres';
import { tmpWorkspace } from '../../helpers/tmp-workspace';
import { processesContract } from './processes.contract';

const RUN = `INSERT INTO agent_runs (id, session_id, family_session_id, status, agent, origin, prompt, options, created_at, updated_at)
  VALUES ($1, 's1', 's1', 'queued', 'build', 'cli', 'hi', '{}', 1, 1)`;
const EVENT =
  'INSERT INTO agent_run_events (run_id, session_id, seq, type, payload, created_at) VALUES ($1, $2, $3, $4, $5, $6)';

describe('ProcessRepository contract on SQLite', () => {
  processesContract(async () => {
    const db = openDb({ dataDir: tmpWorkspace() });
    const sqlite = (text: string) => text.replace(/\$\d/g, '?');
    return {
      processes: createProcessRepository(() => db),
      addRuns: async (ids) => {
        db.prepare('INSERT INTO sessions (id, created_at, updated_at) VALUES (?, 1, 1)').run('s1');
        for (const id of ids) db.prepare(sqlite(RUN)).run(id);
      },
      addEvent: async (runId, seq, type, payload, at) => {
        db.prepare(sqlite(EVENT)).run(runId, 's1', seq, type, JSON.stringify(payload), at);
      },
      close: async () => {
        db.close();
      },
    };
  });
});

const pg = postgresForFile();

describe.skipIf(!pg.available)('ProcessRepository contract on PostgreSQL', () => {
  processesContract(async () => {
    const sql = await migratedDatabase(pg.cluster());
    return {
      processes: createPostgresProcessRepository({ sql }),
      addRuns: async (ids) => {
        await sql.run('INSERT INTO sessions (id, created_at, updated_at) VALUES ($1, 1, 1)', ['s1']);
        for (const id of ids) await sql.run(RUN, [id]);
      },
      addEvent: async (runId, seq, type, payload, at) => {
        await sql.run(EVENT, [runId, 's1', seq, type, JSON.stringify(payload), at]);
      },
      close: () => sql.close(),
    };
  });
});
