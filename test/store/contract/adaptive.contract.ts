/**
 * The adaptive orchestration store's contract (issue 18): what every backend's `adaptive_*`
 * tables answer, run on SQLite and on PostgreSQL by ./adaptive.contract.test.ts. Pins: a session
 * row round-trips (JSON columns parsed, nulls kept), `all` in session id order, `update` writes
 * what its change returns (nothing for undefined, an evaluation with it), the evaluation ring
 * (newest first, kept to `keep` per session), the shadow-scored filter, counts and the last
 * evaluation time, and the reviewer passes (patch, lookups, outcomes).
 */
import { expect, it } from 'vitest';
import {
  type AdaptiveRow,
  type AdaptiveStore,
  type EvaluationRow,
  emptyRow,
  type ReviewRow,
} from '../../../src/adaptive/store';
import { withOpened } from './fixture';

export const ADAPTIVE_SESSIONS = ['s1', 's2', 's3'];

export type OpenAdaptiveStore = () => Promise<{ store: AdaptiveStore; close: () => Promise<void> }>;

export function adaptiveStoreContract(open: OpenAdaptiveStore): void {
  const withStore = withOpened(open, (f) => f.store);

  const full = (sessionId: string): AdaptiveRow => ({
    ...emptyRow(sessionId, 1000),
    genome: '{"choreography_preset":"solo"}',
    revision: 3,
    classification_source: 'heuristic',
    classified_preset: 'solo',
    shadow_preset: 'fan_out',
    reshapes: 1,
    proposal: {
      genome: { choreography_preset: 'fan_out' } as never,
      rule: 'failure_rate' as never,
      reason: 'too many failures',
      signal_id: 'sig_1',
      base_revision: 3,
      recorded_at: 900,
      evaluation: { cadence: 3, decision: 'recorded', reason: 'r', signal_id: 'sig_1' },
      baseline: { failed: 2, attributable: 3 },
    },
    apply_status: 'pending',
    pending_since: 950,
    window_runs: ['run_1', 'run_2'],
    runs_since_eval: 2,
    last_evaluation: {
      cadence: 3,
      decision: 'skipped',
      reason: 'x',
      signal_id: 'sig_0',
      skip_reason: 'reshape_pending',
    },
    efficacy: { before: { failed: 2, attributable: 3 }, after: { failed: 0, attributable: 1 } },
    plan_gate_revision: 2,
    last_action: 'updated',
  });

  const evaluation = (
    sessionId: string,
    at: number,
    over: Partial<EvaluationRow> = {},
  ): Omit<EvaluationRow, 'id'> => ({
    session_id: sessionId,
    event_kind: 'eval_recorded',
    at,
    evaluation: { cadence: 3, decision: 'recorded', reason: `at ${at}`, signal_id: `sig_${at}` },
    previous_fingerprint: null,
    next_fingerprint: null,
    effective_preset: 'solo',
    signals: { failed: 1, attributable: 2 },
    shadow: null,
    ...over,
  });

  const review = (
    sessionId: string,
    runId: string,
    over: Partial<ReviewRow> = {},
  ): Omit<ReviewRow, 'id'> => ({
    session_id: sessionId,
    run_id: runId,
    child_session_id: null,
    child_run_id: null,
    status: 'running',
    findings: '',
    created_at: 100,
    finished_at: null,
    ...over,
  });

  it(
    'STORE-PG-adaptive: a session row round-trips with its JSON columns and nulls; all() is in session order',
    withStore(async (store) => {
      expect(await store.get('s1')).toBeUndefined();
      expect(await store.all()).toEqual([]);
      await store.put(full('s2'));
      await store.put(emptyRow('s1', 5));
      expect(await store.get('s2')).toEqual(full('s2'));
      expect(await store.get('s1')).toEqual(emptyRow('s1', 5));
      await store.put({
        ...full('s2'),
        proposal: null,
        efficacy: null,
        last_evaluation: null,
        pending_since: null,
      });
      expect(await store.get('s2')).toMatchObject({
        proposal: null,
        efficacy: null,
        last_evaluation: null,
        pending_since: null,
      });
      expect((await store.all()).map((r) => r.session_id)).toEqual(['s1', 's2']);
    }),
  );

  it(
    'STORE-PG-adaptive: update writes what its change returns, with its evaluation, and nothing for undefined',
    withStore(async (store) => {
      const seen: (AdaptiveRow | undefined)[] = [];
      expect(
        await store.update('s1', (current) => {
          seen.push(current);
          return undefined;
        }),
      ).toBeUndefined();
      expect(seen).toEqual([undefined]);
      expect(await store.get('s1')).toBeUndefined();
      const written = await store.update('s1', (current) => ({
        row: { ...(current ?? emptyRow('s1', 10)), revision: 1 },
        evaluation: { row: evaluation('s1', 10), keep: 5 },
      }));
      expect(written).toEqual({ ...emptyRow('s1', 10), revision: 1 });
      expect(await store.get('s1')).toEqual(written);
      expect((await store.evaluations('s1', 10)).map((e) => e.at)).toEqual([10]);
      await store.update('s1', (current) => ({ row: { ...current!, revision: current!.revision + 1 } }));
      expect((await store.get('s1'))?.revision).toBe(2);
      expect(await store.evaluations('s1', 10)).toHaveLength(1);
    }),
  );

  it(
    'STORE-PG-adaptive: the evaluation ring is newest first, limited, and keeps the newest `keep` per session',
    withStore(async (store) => {
      const ids: number[] = [];
      for (let at = 1; at <= 6; at++) ids.push(await store.addEvaluation(evaluation('s1', at), 4));
      await store.addEvaluation(evaluation('s2', 100), 4);
      expect(ids).toEqual([...ids].sort((a, b) => a - b));
      const kept = await store.evaluations('s1', 10);
      expect(kept.map((e) => e.at)).toEqual([6, 5, 4, 3]);
      expect(kept[0]).toEqual({ id: ids[5], ...evaluation('s1', 6) });
      expect((await store.evaluations('s1', 2)).map((e) => e.at)).toEqual([6, 5]);
      expect(await store.evaluations('s3', 10)).toEqual([]);
      expect((await store.evaluations('s2', 10)).map((e) => e.at)).toEqual([100]);
    }),
  );

  it(
    'STORE-PG-adaptive: scored() keeps shadow-scored evaluations, of a session or all; counts and the last time',
    withStore(async (store) => {
      expect(await store.counts()).toEqual({ recorded: 0, skipped: 0, reshapes: 0 });
      expect(await store.lastEvaluationAt()).toBeNull();
      const shadow = {
        preset: 'fan_out' as const,
        decision: 'hold',
        effective_decision: 'hold',
        agreed: true,
      };
      await store.addEvaluation(evaluation('s1', 1, { shadow }), 10);
      await store.addEvaluation(evaluation('s1', 2, { event_kind: 'eval_skipped' }), 10);
      await store.addEvaluation(evaluation('s2', 3, { shadow: { ...shadow, agreed: false } }), 10);
      await store.addEvaluation(
        evaluation('s2', 2, {
          event_kind: 'reshape_applied',
          previous_fingerprint: 'a',
          next_fingerprint: 'b',
        }),
        10,
      );
      expect((await store.scored('s1', 10)).map((e) => [e.at, e.shadow])).toEqual([[1, shadow]]);
      expect((await store.scored(undefined, 10)).map((e) => e.at)).toEqual([3, 1]);
      expect((await store.scored(undefined, 1)).map((e) => e.at)).toEqual([3]);
      expect(await store.counts()).toEqual({ recorded: 2, skipped: 1, reshapes: 1 });
      expect(await store.lastEvaluationAt()).toBe(3);
      expect((await store.evaluations('s2', 1))[0]).toMatchObject({
        previous_fingerprint: 'a',
        next_fingerprint: 'b',
      });
    }),
  );

  it(
    'STORE-PG-adaptive: reviewer passes: added, patched, listed newest first, found by run and child run',
    withStore(async (store) => {
      const a = await store.addReview(review('s1', 'run_1'));
      const b = await store.addReview(review('s1', 'run_2', { status: 'failed', finished_at: 200 }));
      const c = await store.addReview(review('s2', 'run_3'));
      expect(a < b && b < c).toBe(true);
      await store.updateReview(a, { child_session_id: 'child_1', child_run_id: 'crun_1' });
      await store.updateReview(a, { status: 'approved', findings: 'looks good', finished_at: 300 });
      await store.updateReview(c, {});
      expect(await store.reviews('s1', 10)).toEqual([
        { id: b, ...review('s1', 'run_2', { status: 'failed', finished_at: 200 }) },
        {
          id: a,
          ...review('s1', 'run_1', {
            child_session_id: 'child_1',
            child_run_id: 'crun_1',
            status: 'approved',
            findings: 'looks good',
            finished_at: 300,
          }),
        },
      ]);
      expect((await store.reviews('s1', 1)).map((r) => r.id)).toEqual([b]);
      expect(
        (await store.reviewsOfRuns(['run_1', 'run_3', 'nope'])).map((r) => r.id).sort((x, y) => x - y),
      ).toEqual([a, c]);
      expect(await store.reviewsOfRuns([])).toEqual([]);
      expect((await store.reviewByChildRun('crun_1'))?.id).toBe(a);
      expect(await store.reviewByChildRun('nope')).toBeUndefined();
      const outcomes = (o: { status: string; child_run_id: string | null }[]) =>
        [...o].sort((x, y) => x.status.localeCompare(y.status));
      expect(outcomes(await store.reviewOutcomes('s1'))).toEqual([
        { status: 'approved', child_run_id: 'crun_1' },
        { status: 'failed', child_run_id: null },
      ]);
      expect(await store.reviewOutcomes()).toHaveLength(3);
    }),
  );
}
