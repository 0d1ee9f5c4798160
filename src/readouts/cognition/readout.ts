/**
 * The operator cognition readout: a read-only, ledger-bound summary of recommendation
 * follow-through over the calibration window (last `window_days` days or last `window_max`
 * recommendations, whichever is smaller), per signal zone. It counts what was recommended and what
 * happened next; it never scores, grades or describes the operator.
 * @module
 */
import type { Config } from '../../config/schema';
import { SvcError } from '../../errors';
import type { Clock } from '../../util/ids';
import {
  COGNITION_ZONES,
  type Outcome,
  type Recommendation,
  type RecommendationLedger,
} from './recommendation-store';

export const COGNITION_SCHEMA_VERSION = 'svc.operator_cognition.v1';
export const MIN_CLOSED_FOR_EVIDENCE = 5;
export const EVIDENCE_BOUNDARY =
  'Counts recorded recommendations and the outcomes observed in the ledger; it does not grade operators or infer anything about them.';

export interface CognitionPattern {
  zone: string;
  recommendations: number;
  followed: number;
  dismissed: number;
  expired: number;
  pending: number;
  /** followed / (followed + dismissed + expired); null without closed recommendations. */
  follow_through_rate: number | null;
  median_seconds_to_follow: number | null;
  kinds: Record<string, number>;
}

export async function buildCognitionReadout(
  app: { readonly config: Config; readonly clock: Clock },
  ledger: Pick<RecommendationLedger, 'window'>,
  zone?: string,
) {
  const cfg = app.config.options.cognition;
  const now = app.clock.now();
  const since = now - cfg.window_days * 86_400_000;
  let recs: Recommendation[];
  try {
    recs = await ledger.window({ since, max: cfg.window_max, zone: zone || undefined });
  } catch (error) {
    throw new SvcError(
      'unavailable',
      `recommendation outcome ledger unavailable: ${SvcError.is(error) ? error.message : (error as Error).message}`,
      {
        cause: error,
      },
    );
  }
  // Read-only: a pending recommendation whose window passed counts as expired without a write.
  const outcomeOf = (r: Recommendation): Outcome =>
    r.outcome === 'pending' && r.recommended_at + r.window_seconds * 1000 < now ? 'expired' : r.outcome;

  const zones = zone
    ? [zone]
    : [
        ...new Set([
          ...COGNITION_ZONES.filter((z) => recs.some((r) => r.zone === z)),
          ...recs.map((r) => r.zone),
        ]),
      ];
  const patterns: CognitionPattern[] = zones.map((z) => {
    const inZone = recs.filter((r) => r.zone === z);
    const count = (o: Outcome) => inZone.filter((r) => outcomeOf(r) === o).length;
    const followed = count('followed');
    const closed = followed + count('dismissed') + count('expired');
    const delays = inZone
      .filter((r) => outcomeOf(r) === 'followed' && r.outcome_at !== null)
      .map((r) => Math.round(((r.outcome_at as number) - r.recommended_at) / 1000))
      .sort((a, b) => a - b);
    const kinds: Record<string, number> = {};
    for (const r of inZone) kinds[r.kind] = (kinds[r.kind] ?? 0) + 1;
    return {
      zone: z,
      recommendations: inZone.length,
      followed,
      dismissed: count('dismissed'),
      expired: count('expired'),
      pending: count('pending'),
      follow_through_rate: closed === 0 ? null : Math.round((followed / closed) * 1000) / 1000,
      median_seconds_to_follow: delays.length === 0 ? null : delays[Math.floor((delays.length - 1) / 2)],
      kinds,
    };
  });

  const warnings: string[] = [];
  if (recs.length === 0)
    warnings.push(
      zone
        ? `no_recommendations: zone ${zone} has none in the calibration window`
        : 'no_recommendations: the ledger has none in the calibration window',
    );
  for (const p of patterns) {
    const closed = p.followed + p.dismissed + p.expired;
    if (p.recommendations > 0 && closed < MIN_CLOSED_FOR_EVIDENCE) {
      warnings.push(
        `insufficient_evidence: zone ${p.zone} has ${closed} closed recommendation(s); at least ${MIN_CLOSED_FOR_EVIDENCE} are needed for a rate to mean much`,
      );
    }
  }
  if (zone && !(COGNITION_ZONES as readonly string[]).includes(zone))
    warnings.push(`unknown_zone: ${zone} is not a known signal zone (${COGNITION_ZONES.join(', ')})`);

  return {
    schema_version: COGNITION_SCHEMA_VERSION,
    generated_at_unix: Math.floor(now / 1000),
    scope: zone ? 'zone' : 'global',
    zone: zone ?? '',
    calibration_window: {
      days: cfg.window_days,
      max_recommendations: cfg.window_max,
      since_unix: Math.floor(since / 1000),
      recommendations_in_window: recs.length,
    },
    patterns,
    warnings,
    evidence_boundary: EVIDENCE_BOUNDARY,
  };
}
