/**
 * The recommendation outcome ledger: whenever the runtime recommends something to the operator it
 * records the recommendation with its signal zone; later evidence sets the outcome (followed,
 * dismissed, expired). Read by the operator cognition readout.
 * @module
 */
import { createHash } from 'node:crypto';
import type { Db } from '../../store/db';
import type { Clock, Ids } from '../../util/ids';

export const COGNITION_ZONES = [
  'token_pressure',
  'loop_detection',
  'permission_policy',
  'compaction',
  'provider_recovery',
] as const;
export type CognitionZone = (typeof COGNITION_ZONES)[number];
export type Outcome = 'pending' | 'followed' | 'dismissed' | 'expired';

export interface Recommendation {
  id: string;
  zone: CognitionZone;
  kind: string;
  recommended_at: number;
  session_id: string | null;
  run_id: string | null;
  payload_digest: string;
  outcome: Outcome;
  outcome_at: number | null;
  evidence: Record<string, unknown>;
  window_seconds: number;
}

export interface RecommendationLedger {
  record(input: {
    zone: CognitionZone;
    kind: string;
    session_id?: string | null;
    run_id?: string | null;
    /** What was recommended, digested (never stored verbatim). */
    payload: unknown;
    window_seconds: number;
    evidence?: Record<string, unknown>;
  }): Recommendation;
  /** Sets the outcome of a pending recommendation; returns false if it was already closed. */
  close(id: string, outcome: Exclude<Outcome, 'pending'>, evidence?: Record<string, unknown>): boolean;
  pending(filter?: { session_id?: string; zone?: CognitionZone; kind?: string }): Recommendation[];
  /** Newest first, within the calibration window (days and max count, whichever is smaller). */
  window(options: { since: number; max: number; zone?: string }): Recommendation[];
  get(id: string): Recommendation | undefined;
  /** Marks pending recommendations whose window passed as expired. */
  expire(): number;
}

interface Row extends Omit<Recommendation, 'evidence'> {
  evidence: string;
}

export function createRecommendationLedger(deps: {
  db: () => Db;
  clock: Clock;
  ids: Ids;
}): RecommendationLedger {
  const toRec = (row: Row): Recommendation => ({ ...row, evidence: JSON.parse(row.evidence) });
  const get = (id: string) => {
    const row = deps.db().prepare('SELECT * FROM recommendations WHERE id = ?').get(id) as Row | undefined;
    return row ? toRec(row) : undefined;
  };
  return {
    record(input) {
      const id = deps.ids.next('rec');
      const digest = createHash('sha256')
        .update(JSON.stringify(input.payload ?? null))
        .digest('hex')
        .slice(0, 16);
      deps
        .db()
        .prepare(
          `INSERT INTO recommendations (id, zone, kind, recommended_at, session_id, run_id, payload_digest, evidence, window_seconds)
           VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
        )
        .run(
          id,
          input.zone,
          input.kind,
          deps.clock.now(),
          input.session_id ?? null,
          input.run_id ?? null,
          digest,
          JSON.stringify(input.evidence ?? {}),
          input.window_seconds,
        );
      return get(id)!;
    },
    close(id, outcome, evidence) {
      const current = get(id);
      if (current?.outcome !== 'pending') return false;
      deps
        .db()
        .prepare(
          "UPDATE recommendations SET outcome = ?, outcome_at = ?, evidence = ? WHERE id = ? AND outcome = 'pending'",
        )
        .run(outcome, deps.clock.now(), JSON.stringify({ ...current.evidence, ...evidence }), id);
      return true;
    },
    pending(filter = {}) {
      const rows = deps
        .db()
        .prepare("SELECT * FROM recommendations WHERE outcome = 'pending' ORDER BY recommended_at")
        .all() as Row[];
      return rows
        .map(toRec)
        .filter(
          (r) =>
            (!filter.session_id || r.session_id === filter.session_id) &&
            (!filter.zone || r.zone === filter.zone) &&
            (!filter.kind || r.kind === filter.kind),
        );
    },
    window(options) {
      const rows = (
        options.zone
          ? deps
              .db()
              .prepare(
                'SELECT * FROM recommendations WHERE recommended_at >= ? AND zone = ? ORDER BY recommended_at DESC LIMIT ?',
              )
              .all(options.since, options.zone, options.max)
          : deps
              .db()
              .prepare(
                'SELECT * FROM recommendations WHERE recommended_at >= ? ORDER BY recommended_at DESC LIMIT ?',
              )
              .all(options.since, options.max)
      ) as Row[];
      return rows.map(toRec);
    },
    get,
    expire() {
      return deps
        .db()
        .prepare(
          "UPDATE recommendations SET outcome = 'expired', outcome_at = ? WHERE outcome = 'pending' AND recommended_at + window_seconds * 1000 < ?",
        )
        .run(deps.clock.now(), deps.clock.now()).changes;
    },
  };
}
