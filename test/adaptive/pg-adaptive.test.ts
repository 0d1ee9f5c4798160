/**
 * Adaptive orchestration on an App served from PostgreSQL (issue 18): the classifier and the
 * monitor keep their state in the database's `adaptive_*` tables, never in svc.db.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { reply } from '../helpers/fake-provider';
import { migratedDatabase, postgresForFile } from '../helpers/postgres';
import { adaptiveApp, systemOf } from './helpers';

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
      if (!systemOf(provider.requests[0]).includes('Choreography'))
        console.log(
          'DEBUG',
          JSON.stringify(
            app.memoryLog.records.filter((r) => /adaptive|warn|error/.test(JSON.stringify(r))).slice(0, 20),
          ),
          JSON.stringify(await app.runs.events(run.run_id)).slice(0, 3000),
        );
      // As on SQLite: the monitor handled run.started (stored, then delivered) before the run
      // assembled its prompt, so the first run's prompt carries the classified genome.
      expect(systemOf(provider.requests[0])).toContain('Choreography: fan_out (topology hub_and_spoke).');
      const classified = await app.runs.events(run.run_id, { types: ['adaptive.classified'] });
      expect(classified).toHaveLength(1);
      expect(classified[0].payload).toMatchObject({ preset: 'fan_out', source: 'heuristic' });
      expect(
        (await sql.query<{ session_id: string }>('SELECT session_id FROM adaptive_sessions')).map(
          (r) => r.session_id,
        ),
      ).toEqual([run.session_id]);
      // run.finished was handled before the run's waiters went on.
      expect(
        await sql.query<{ event_kind: string }>(
          'SELECT event_kind FROM adaptive_evaluations WHERE session_id = $1',
          [run.session_id],
        ),
      ).toContainEqual({ event_kind: 'eval_recorded' });
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
