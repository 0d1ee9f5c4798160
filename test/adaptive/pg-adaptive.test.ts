/**
 * Adaptive orchestration on an App served from PostgreSQL (issue 18): the classifier and the
 * monitor keep their state in the database's `adaptive_*` tables, never in svc.db.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { reply } from '../helpers/fake-provider';
import { migratedDatabase, postgresForFile } from '../helpers/postgres';
import { adaptiveApp } from './helpers';

const pg = postgresForFile();

describe.skipIf(!pg.available)('adaptive orchestration served from PostgreSQL', () => {
  it('STORE-PG-adaptive: the first run classifies the genome and the monitor evaluates, on PostgreSQL; no svc.db', async () => {
    const sql = await migratedDatabase(pg.cluster());
    try {
      const { app, provider } = await adaptiveApp(
        [reply().text('surveyed')],
        { monitor: { cadence: 1 } },
        { postgres: sql },
      );
      const run = await app.agent.run({ prompt: 'Audit every module across the codebase in parallel' });
      expect(run.status).toBe('completed');
      // Known gap on PostgreSQL (issue 18): the monitor handles run.started once the event is
      // stored, which under load can be after the run ended, and the run is then evaluated
      // without its classification (on SQLite never: test/adaptive pins it). So here: the
      // monitor's state is in the database's adaptive_* tables, whatever it decided.
      await vi.waitFor(
        async () =>
          expect(
            (await sql.query<{ session_id: string }>('SELECT session_id FROM adaptive_sessions')).map(
              (r) => r.session_id,
            ),
          ).toEqual([run.session_id]),
        { timeout: 10_000 },
      );
      // On PostgreSQL the bus delivers run.finished once stored, which may be after the run's
      // waiters went on (`adaptive.settled()` cannot wait for it inside finishRun's transaction).
      await vi.waitFor(
        async () =>
          expect(
            await sql.query<{ event_kind: string }>(
              'SELECT event_kind FROM adaptive_evaluations WHERE session_id = $1',
              [run.session_id],
            ),
          ).toContainEqual({ event_kind: 'eval_recorded' }),
        { timeout: 10_000 },
      );
      const problems = app.memoryLog.records.filter((r) => r.level === 'warn' || r.level === 'error');
      expect(
        problems.map((r) => `${r.message}: ${JSON.stringify(r)}`),
        JSON.stringify(problems),
      ).toEqual([]);
      await app.close();
      expect(existsSync(join(app.dataDir, 'svc.db'))).toBe(false);
    } finally {
      await sql.close();
    }
  });
});
