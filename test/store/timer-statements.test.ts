/**
 * The statements the test recorders leave out as an App's timers' (`TIMER_STATEMENTS`,
 * test/helpers/postgres.ts) are the ones svc sends on its timers: if their text changes there, the
 * recorders would count them again and the statement-order tests would flake on a loaded box
 * (STORE-PG-252 failed CI once with the cancel poll between two statements it counts).
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { TIMER_STATEMENTS } from '../helpers/postgres';

const sqlIn = (file: string, marker: RegExp): string => {
  const text = readFileSync(file, 'utf8');
  const found = marker.exec(text);
  if (!found) throw new Error(`no statement matching ${marker} in ${file}`);
  return found[1];
};

describe('timer statements', () => {
  it("names the cancel poll's, the store monitor's and a lease renewal's statements as svc sends them", () => {
    const sent = [
      sqlIn('src/runs/pg-run-queries.ts', /'(SELECT cancel_requested FROM agent_runs[^']*)'/),
      sqlIn('src/store/postgres/monitor.ts', /'(SELECT max\(id\) AS version FROM schema_migrations)'/),
      sqlIn('src/workspace/pg-lease-repository.ts', /'(UPDATE workspace_leases SET expires_at[^']*)'/),
    ];
    for (const text of sent) expect(TIMER_STATEMENTS.test(text), text).toBe(true);
    // And none of a run's own: a session read, a step's statement, the lease's take and release.
    for (const text of [
      'SELECT * FROM sessions WHERE id = $1',
      'SELECT * FROM agent_runs WHERE id = $1',
      'DELETE FROM workspace_leases WHERE workspace = $1 AND holder = $2',
      'UPDATE agent_runs SET cancel_requested = 1 WHERE id = $1',
    ])
      expect(TIMER_STATEMENTS.test(text), text).toBe(false);
  });
});
