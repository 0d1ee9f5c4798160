/**
 * The recommendation recorder on a compat request's signals (issue 17 item 3, p-leanrun): a run's
 * `run.started` and a new top-level session's `session.created` only follow pending
 * recommendations of their rule. With none pending (SQLite's store answers at once from its kept
 * rows, checked against `data_version`), nothing queued and no sweep due, they queue no step in
 * the ledger and make no promise. A pending one, recorded here or by another connection, is still
 * followed.
 */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { openDb } from '../../src/store/db';
import { makeTestApp } from '../helpers/make-test-app';
import { countPromises } from '../helpers/promises';

describe('recommendation recorder: follow rules with nothing pending', () => {
  it('COMPAT-PERF-110: run.started and a top-level session.created queue nothing while none of their rule is pending', async () => {
    const app = await makeTestApp({ config: { options: { health_followons: { enabled: false } } } });
    const s = (await app.sessions.create()).id;
    // A first signal sweeps once (nothing known yet), then no window can end within the hour.
    app.bus.publish(s, 'run.started', { run_id: 'run_0', session_id: s });
    await app.recommendations.flush();
    const events = 100;
    const made = await countPromises(async () => {
      for (let i = 0; i < events; i++) {
        app.bus.publish(s, 'run.started', { run_id: `run_${i + 1}`, session_id: s });
        app.bus.publish(`ses_new${i}`, 'session.created', { session_id: `ses_new${i}`, parent_id: null });
      }
      await app.recommendations.flush();
    });
    // ≈ 0.01 an event (the ledger's flush); 11.0 on b2229f4 (a queued step, its read and sweep).
    expect(made / (2 * events)).toBeLessThan(1);

    // Pending in the session: run.started follows it, as before.
    const loop = await app.recommendations.record({
      zone: 'loop_detection',
      kind: 'revise_instructions',
      session_id: s,
      payload: { tool: 'bash' },
      window_seconds: 3600,
      evidence: { tool: 'bash' },
    });
    app.bus.publish(s, 'run.started', { run_id: 'run_x', session_id: s });
    await app.recommendations.flush();
    expect(await app.recommendations.get(loop.id)).toMatchObject({
      outcome: 'followed',
      evidence: { tool: 'bash', run_id: 'run_x' },
    });

    // Recorded by another connection (another process): seen, and followed by a new session.
    const other = openDb({ dataDir: join(app.db.name, '..') });
    try {
      other
        .prepare(
          `INSERT INTO recommendations (id, zone, kind, recommended_at, session_id, run_id, payload_digest, evidence, window_seconds)
           VALUES ('rec_other', 'compaction', 'start_new_session', ?, ?, NULL, 'x', '{}', 86400)`,
        )
        .run(app.clock.now(), s);
    } finally {
      other.close();
    }
    app.bus.publish('ses_after', 'session.created', { session_id: 'ses_after', parent_id: null });
    await app.recommendations.flush();
    expect(await app.recommendations.get('rec_other')).toMatchObject({
      outcome: 'followed',
      evidence: { new_session_id: 'ses_after' },
    });
    // A child session follows nothing.
    expect(await app.recommendations.pending({})).toEqual([]);
  });
});
