/**
 * The recommendation ledger's pending read on SQLite (issue 17 item 3): the same rows in the same
 * order as every pending row filtered afterwards, also for rows another process (a second
 * connection on the same data dir) recorded, read from the database once while nothing changed;
 * and the recorder still follows a recommendation that other process recorded.
 * @module
 */
import type { Statement } from 'better-sqlite3';
import { afterEach, describe, expect, it, vi } from 'vitest';
import {
  createRecommendationRepository,
  matchesPending,
  type PendingFilter,
} from '../../src/readouts/cognition/recommendation-store';
import { type Db, openDb } from '../../src/store/db';
import { makeTestApp } from '../helpers/make-test-app';

afterEach(() => {
  vi.restoreAllMocks();
});

/** How many rows of `recommendations` the statements run from now on hand back. */
function rowsRead(db: Db): { rows: number } {
  const proto = Object.getPrototypeOf(db.prepare('SELECT 1')) as Statement;
  const out = { rows: 0 };
  const original = proto.all as (...args: unknown[]) => unknown[];
  vi.spyOn(proto, 'all').mockImplementation(function (this: Statement, ...args: unknown[]) {
    const rows = original.apply(this, args);
    if (this.source.includes('FROM recommendations')) out.rows += rows.length;
    return rows;
  } as never);
  return out;
}

describe('pending recommendations', () => {
  it('STORE-64 a filtered pending read gives what filtering every pending row gives, rows of another process included', async () => {
    const app = await makeTestApp({ config: { options: { health_followons: { enabled: false } } } });
    let n = 0;
    const clock = { now: () => 1_000 + (n++ % 3) }; // ties in recommended_at: the id orders them
    const ids = { next: (prefix: string) => `${prefix}_${String(n++).padStart(4, '0')}` };
    const other = createRecommendationRepository({ db: () => openDb({ dataDir: app.dataDir }), clock, ids });
    const zones = ['loop_detection', 'compaction', 'token_pressure'] as const;
    for (let i = 0; i < 18; i++) {
      const rec = await other.record({
        zone: zones[i % 3],
        kind: i % 2 ? 'revise_instructions' : 'start_new_session',
        session_id: i % 4 === 0 ? null : `ses_${i % 2}`,
        payload: { i },
        window_seconds: 3600,
      });
      if (i % 5 === 0) await other.close(rec.id, 'dismissed');
    }
    const all = await other.pending();
    expect(all.length).toBe(14);
    const filters: PendingFilter[] = [
      {},
      { zone: 'loop_detection' },
      { zone: 'compaction', kind: 'start_new_session' },
      { session_id: 'ses_1', zone: 'loop_detection', kind: 'revise_instructions' },
      { session_id: 'ses_0' },
      { session_id: '', kind: 'revise_instructions' },
    ];
    let first = true;
    for (const filter of filters) {
      const expected = all.filter(matchesPending(filter)).map((r) => r.id);
      const read = rowsRead(app.db);
      expect((await app.recommendations.pending(filter)).map((r) => r.id)).toEqual(expected);
      // The pending rows come out of the database once, then from memory while nothing changed
      // (ENGINE-READS-4; before: the rows of each filter at every read).
      expect(read.rows).toBe(first ? 14 : 0);
      first = false;
      vi.restoreAllMocks();
    }
  });

  it('STORE-65 a loop recommendation another process recorded is followed when a run starts in its session', async () => {
    const app = await makeTestApp({ config: { options: { health_followons: { enabled: false } } } });
    const s = (await app.sessions.create()).id;
    let n = 0;
    const other = createRecommendationRepository({
      db: () => openDb({ dataDir: app.dataDir }),
      clock: { now: () => Date.now() },
      ids: { next: (prefix: string) => `${prefix}_other_${n++}` },
    });
    const theirs = await other.record({
      zone: 'loop_detection',
      kind: 'revise_instructions',
      session_id: s,
      payload: { tool: 'bash' },
      window_seconds: 3600,
    });
    const elsewhere = await other.record({
      zone: 'loop_detection',
      kind: 'revise_instructions',
      session_id: 'ses_elsewhere',
      payload: { tool: 'bash' },
      window_seconds: 3600,
    });
    app.bus.publish(s, 'run.started', { session_id: s, run_id: 'run_9' });
    await app.bus.flush();
    await app.recommendations.flush();
    expect(await other.get(theirs.id)).toMatchObject({ outcome: 'followed', evidence: { run_id: 'run_9' } });
    expect(await other.get(elsewhere.id)).toMatchObject({ outcome: 'pending' });
  });
});
