/**
 * The run ledger's run → session cache on SQLite (issue 17 item 3, p-deopt): bounded to the last
 * 1,000 runs remembered, not cleared whole past its bound. The clear forgot every run in flight
 * (each of their next appends read its session again) and its branch, taken once a thousand
 * claims, deopted the claim and append paths once a process (V8's "Insufficient type feedback";
 * counted with `bench/compat-rounds.mjs` and `--trace-deopt`, which a test cannot show).
 */
import { afterEach, describe, expect, it } from 'vitest';
import { createRunEvents } from '../../src/runs/run-events';
import type { Db } from '../../src/store/db';
import { recentMap } from '../../src/util/recent-map';
import { openTestDb } from '../helpers/sqlite-ledger';

const opened: Db[] = [];
afterEach(() => {
  for (const db of opened.splice(0)) db.close();
});

function events() {
  const { db } = openTestDb(opened);
  const looked: string[] = [];
  let id = 0;
  const ledger = createRunEvents({
    rawDb: () => db,
    clock: { now: () => 1 },
    queries: {
      sessionOf: (runId: string) => {
        looked.push(runId);
        return `ses_of_${runId}`;
      },
    },
    writes: {
      insertEvent: () => ({ id: ++id, seq: 1 }),
      insertEventAt: (_input: unknown, seq: number) => ({ id: ++id, seq }),
    } as never,
  });
  return { ledger, looked };
}

describe('the run ledger’s run → session cache', () => {
  it('COMPAT-PERF-460: runs claimed before the 1,001st claim are not looked up again after it; the last 1,000 are kept', () => {
    const { ledger, looked } = events();
    for (let i = 0; i < 1002; i++) ledger.known(`run_${i}`, `ses_${i}`);
    // In flight when the bound was passed: the claim's session, no read.
    expect(ledger.append('run_500', 'phase', {}).session_id).toBe('ses_500');
    expect(ledger.append('run_2', 'phase', {}).session_id).toBe('ses_2');
    expect(ledger.append('run_1001', 'phase', {}).session_id).toBe('ses_1001');
    expect(looked).toEqual([]);
    // The oldest two are dropped: read, then remembered.
    expect(ledger.append('run_0', 'phase', {}).session_id).toBe('ses_of_run_0');
    expect(ledger.append('run_0', 'phase', {}).session_id).toBe('ses_of_run_0');
    expect(looked).toEqual(['run_0']);
  });

  it('COMPAT-PERF-461: the bounded map keeps exactly the last `bound` keys set; a forgotten key is gone', () => {
    const map = recentMap<number>(3);
    for (let i = 0; i < 5; i++) map.set(`k${i}`, i);
    expect([map.get('k0'), map.get('k1'), map.get('k2'), map.get('k3'), map.get('k4')]).toEqual([
      undefined,
      undefined,
      2,
      3,
      4,
    ]);
    expect(map.size).toBe(3);
    map.delete('k3');
    expect(map.get('k3')).toBeUndefined();
    map.set('k5', 5); // drops k2, the oldest slot's key
    expect(map.size).toBe(2);
    expect(map.get('k2')).toBeUndefined();
    expect(map.get('k5')).toBe(5);
  });
});
