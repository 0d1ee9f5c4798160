/**
 * Runs the RunWrites contract (./run-writes.contract.ts) on both backends: the SQLite writes
 * (through an async adapter) and the PostgreSQL writes on a throwaway cluster.
 */
import { describe } from 'vitest';
import { createPostgresRunWrites } from '../../../src/runs/pg-run-write-repository';
import { createRunWrites } from '../../../src/runs/run-repository';
import { openDb } from '../../../src/store/db';
import { migratedDatabase, postgresForFile } from '../../helpers/postgres';
import { tmpWorkspace } from '../../helpers/tmp-workspace';
import { runWritesContract } from './run-writes.contract';

describe('RunWrites contract on SQLite', () => {
  runWritesContract(async () => {
    const db = openDb({ dataDir: tmpWorkspace() });
    const w = createRunWrites(
      (text) => db.prepare(text),
      (fn) => db.transaction(fn)(),
    );
    return {
      writes: {
        insertRun: async (r) => w.insertRun(r),
        interruptIfRunning: async (id, reason, now) => w.interruptIfRunning(id, reason, now),
        interrupt: async (id, reason, now) => w.interrupt(id, reason, now),
        markRunning: async (id, now, owner) => w.markRunning(id, now, owner),
        updateRun: async (id, patch, now) => w.updateRun(id, patch, now),
        requestCancel: async (id, now) => w.requestCancel(id, now),
        deleteRuns: async (ids) => w.deleteRuns(ids),
        insertEvent: async (event) => w.insertEvent(event),
      },
      addSession: async (id) => {
        db.prepare('INSERT INTO sessions (id, created_at, updated_at) VALUES (?, 1, 1)').run(id);
      },
      run: async (id) =>
        db.prepare('SELECT * FROM agent_runs WHERE id = ?').get(id) as Record<string, unknown> | undefined,
      eventCount: async (runId) =>
        (
          db.prepare('SELECT count(*) AS n FROM agent_run_events WHERE run_id = ?').get(runId) as {
            n: number;
          }
        ).n,
      close: async () => {
        db.close();
      },
    };
  });
});

const pg = postgresForFile();

describe.skipIf(!pg.available)('RunWrites contract on PostgreSQL', () => {
  runWritesContract(async () => {
    const sql = await migratedDatabase(pg.cluster());
    return {
      writes: createPostgresRunWrites({ sql }),
      addSession: async (id) => {
        await sql.run('INSERT INTO sessions (id, created_at, updated_at) VALUES ($1, 1, 1)', [id]);
      },
      run: (id) => sql.one('SELECT * FROM agent_runs WHERE id = $1', [id]),
      eventCount: async (runId) =>
        (
          await sql.one<{ n: number }>('SELECT count(*) AS n FROM agent_run_events WHERE run_id = $1', [
            runId,
          ])
        )?.n ?? 0,
      close: () => sql.close(),
    };
  });
});
