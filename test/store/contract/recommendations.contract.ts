/**
 * The recommendation ledger's repository contract (issue 18): what every backend's
 * `recommendations` answers, run on SQLite and on PostgreSQL by ./recommendations.contract.test.ts.
 * Pins: a record answers the stored row (payload digested, evidence an object, outcome pending);
 * pending oldest first with its filters; the window newest first within `since`, per zone,
 * limited; a close only of a pending row, merging its evidence; expiry by each row's own window,
 * and when the first pending window ends (`nextExpiry`); a missing id reads undefined.
 */
import { expect, it } from 'vitest';
import type { RecommendationRepository } from '../../../src/readouts/cognition/recommendation-store';
import type { TestClock } from '../../helpers/make-test-app';
import { withOpened } from './fixture';

export type OpenRecommendations = () => Promise<{
  store: RecommendationRepository;
  clock: TestClock;
  close: () => Promise<void>;
}>;

export function recommendationsContract(open: OpenRecommendations): void {
  const withStore = withOpened(open, (f) => f);

  it(
    'STORE-PG-recs: record, pending oldest first with filters, close once merging evidence',
    withStore(async ({ store, clock }) => {
      expect(await store.pending()).toEqual([]);
      expect(await store.get('rec_none')).toBeUndefined();
      const start = clock.now();
      const a = await store.record({
        zone: 'token_pressure',
        kind: 'compact_session',
        session_id: 's1',
        run_id: 'r1',
        payload: { ratio: 0.9 },
        window_seconds: 3600,
        evidence: { ratio: 0.9 },
      });
      expect(a).toEqual({
        id: a.id,
        zone: 'token_pressure',
        kind: 'compact_session',
        recommended_at: start,
        session_id: 's1',
        run_id: 'r1',
        payload_digest: expect.stringMatching(/^[0-9a-f]{16}$/),
        outcome: 'pending',
        outcome_at: null,
        evidence: { ratio: 0.9 },
        window_seconds: 3600,
      });
      const b = await store.record({
        zone: 'loop_detection',
        kind: 'revise_instructions',
        payload: {},
        window_seconds: 60,
      });
      expect(b).toMatchObject({ session_id: null, run_id: null, evidence: {} });
      expect(b.payload_digest).not.toBe(a.payload_digest);
      clock.advance(1000);
      const c = await store.record({
        zone: 'token_pressure',
        kind: 'compact_session',
        session_id: 's2',
        payload: { ratio: 0.9 },
        window_seconds: 3600,
      });
      expect(c.payload_digest).toBe(a.payload_digest);
      const ids = (recs: { id: string }[]) => recs.map((r) => r.id);
      expect(ids(await store.pending())).toEqual([a.id, b.id, c.id]);
      expect(ids(await store.pending({ zone: 'token_pressure' }))).toEqual([a.id, c.id]);
      expect(ids(await store.pending({ session_id: 's2', kind: 'compact_session' }))).toEqual([c.id]);
      clock.advance(500);
      expect(await store.close(a.id, 'followed', { compaction: 'm1' })).toBe(true);
      expect(await store.close(a.id, 'dismissed')).toBe(false);
      expect(await store.close('rec_none', 'dismissed')).toBe(false);
      expect(await store.get(a.id)).toMatchObject({
        outcome: 'followed',
        outcome_at: start + 1500,
        evidence: { ratio: 0.9, compaction: 'm1' },
      });
      expect(ids(await store.pending())).toEqual([b.id, c.id]);
    }),
  );

  it(
    'STORE-PG-recs: the window newest first, per zone and limited; expiry by each own window',
    withStore(async ({ store, clock }) => {
      const t0 = clock.now();
      const rec = (zone: 'token_pressure' | 'compaction', window_seconds: number) =>
        store.record({ zone, kind: 'k', payload: {}, window_seconds });
      expect(await store.nextExpiry()).toBeNull();
      const a = await rec('token_pressure', 60);
      expect(await store.nextExpiry()).toBe(a.recommended_at + 60_000);
      clock.advance(10_000);
      const b = await rec('compaction', 3600);
      const b2 = await rec('compaction', 3600);
      clock.advance(10_000);
      const c = await rec('token_pressure', 60);
      const ids = (recs: { id: string }[]) => recs.map((r) => r.id);
      expect(ids(await store.window({ since: 0, max: 10 }))).toEqual([c.id, b2.id, b.id, a.id]);
      expect(ids(await store.window({ since: t0 + 1, max: 10 }))).toEqual([c.id, b2.id, b.id]);
      expect(ids(await store.window({ since: 0, max: 2 }))).toEqual([c.id, b2.id]);
      expect(ids(await store.window({ since: 0, max: 10, zone: 'token_pressure' }))).toEqual([c.id, a.id]);
      expect(await store.expire()).toBe(0);
      clock.advance(45_000);
      // a was made 65 s ago with a 60 s window; c 45 s ago.
      expect(await store.expire()).toBe(1);
      expect(await store.get(a.id)).toMatchObject({ outcome: 'expired', outcome_at: clock.now() });
      expect(ids(await store.pending())).toEqual([b.id, b2.id, c.id]);
      expect(await store.nextExpiry()).toBe(c.recommended_at + 60_000);
      expect(await store.expire()).toBe(0);
    }),
  );
}
