/**
 * The adaptive orchestration snapshot (spec, "Adaptive orchestration snapshot"): one read model
 * for the native tool, the MCP tool, the CLI, the SSE `adaptive_orchestration.genome` event and
 * the `include_snapshot` resync. Built only from stored state (no clock read, nothing of this
 * process), so every surface and every process returns the same payload for the same session.
 * Metadata only: the genome, fingerprints, counts and bounded reasons — never a prompt, a tool
 * body, a model response or a full regulatory digest.
 * @module
 */
import { decodeGenome, fingerprint, type Genome } from './genome';
import type { AdaptiveRow, Evaluation, EvaluationRow } from './store';

export const POSTURE_STATES = [
  'disabled',
  'unavailable',
  'enabled-idle',
  'active',
  'pending-apply',
  'applied',
  'degraded',
  'unknown',
] as const;
export type PostureState = (typeof POSTURE_STATES)[number];

export const RESHAPE_ACTIONS = ['recorded', 'queued', 'applied', 'blocked', 'cleared'] as const;
export type ReshapeAction = (typeof RESHAPE_ACTIONS)[number];

export type EfficacyVerdict = 'insufficient_evidence' | 'improved' | 'unchanged' | 'regressed';

/** spec, ADAPT-17: `posture.reason` is bounded text. */
export const POSTURE_REASON_MAX = 240;
/** spec, Limits: at most 32 regulatory history events per response. */
export const HISTORY_RESPONSE_CAP = 32;

export interface AdaptivePosture {
  state: PostureState;
  reason: string;
  implemented: boolean;
  configured: boolean;
  available: boolean;
  active: boolean;
  pending_apply: boolean;
  applied: boolean;
  degraded: boolean;
  decision_trace_available: boolean;
  /** Outcomes after the last applied reshape against the window that caused it (when one was applied). */
  efficacy_verdict?: EfficacyVerdict;
}

export interface RegulatoryHistoryItem {
  event_kind: 'eval_skipped' | 'eval_recorded' | 'reshape_applied';
  at: string;
  evaluation: Evaluation;
  previous_genome_fingerprint?: string;
  next_genome_fingerprint?: string;
}

export type SnapshotAction = 'updated' | 'cleared' | 'monitor_evaluation' | 'unknown';

export interface AdaptiveSnapshot {
  session_id: string;
  action: SnapshotAction;
  posture: AdaptivePosture;
  classification_source?: string;
  effective_genome?: Genome;
  last_reshape_reason?: string;
  last_reshape_signal_id?: string;
  hint_sources?: string;
  runtime_apply_status?: 'pending' | 'applied';
  runtime_apply_pending_since?: string;
  runtime_apply_pending_reason?: string;
  runtime_apply_error?: string;
  last_monitor_evaluation?: Evaluation;
  regulatory_history?: RegulatoryHistoryItem[];
}

export interface SnapshotInput {
  sessionId: string;
  /** The adaptive layer is wired in this runtime. */
  implemented: boolean;
  /** `options.adaptive_orchestration.enabled`. */
  configured: boolean;
  /** `options.adaptive_orchestration.monitor.regulatory_history_max_events`. */
  historyMax: number;
  row?: AdaptiveRow;
  /** Newest first (at least `min(historyMax, 32)` of them). */
  history: EvaluationRow[];
  /** Why the state cannot be read (persistence), or the session is unknown to a posture read. */
  unavailable?: string;
}

const iso = (ms: number) => new Date(ms).toISOString();

export function bounded(text: string, max = POSTURE_REASON_MAX): string {
  const line = text.replace(/\s+/g, ' ').trim();
  return line.length > max ? `${line.slice(0, max - 1)}…` : line;
}

export function efficacyVerdict(row: AdaptiveRow): EfficacyVerdict | undefined {
  if (row.reshapes === 0 || !row.efficacy) return undefined;
  const { before, after } = row.efficacy;
  if (after.attributable < 2) return 'insufficient_evidence';
  const rateBefore = before.attributable ? before.failed / before.attributable : 0;
  const rateAfter = after.failed / after.attributable;
  if (rateAfter <= rateBefore - 0.25) return 'improved';
  if (rateAfter >= rateBefore + 0.25) return 'regressed';
  return 'unchanged';
}

export function historyItems(rows: EvaluationRow[], historyMax: number): RegulatoryHistoryItem[] {
  return rows.slice(0, Math.min(historyMax, HISTORY_RESPONSE_CAP)).map((row) => ({
    event_kind: row.event_kind,
    at: iso(row.at),
    evaluation: row.evaluation,
    ...(row.previous_fingerprint ? { previous_genome_fingerprint: row.previous_fingerprint } : {}),
    ...(row.next_fingerprint ? { next_genome_fingerprint: row.next_fingerprint } : {}),
  }));
}

export function buildSnapshot(input: SnapshotInput): AdaptiveSnapshot {
  const { row } = input;
  const decoded = row ? decodeGenome(row.genome) : undefined;
  const genome = decoded?.ok ? decoded.genome : undefined;
  const historyOn = input.historyMax > 0;
  const evidence =
    row !== undefined && (row.genome !== null || row.last_evaluation !== null || row.last_action !== '');
  const base = {
    implemented: input.implemented,
    configured: input.configured,
    available: false,
    active: false,
    pending_apply: false,
    applied: false,
    degraded: false,
    decision_trace_available: false,
  };
  const posture = (
    state: PostureState,
    reason: string,
    extra: Partial<AdaptivePosture> = {},
  ): AdaptivePosture => ({
    state,
    reason: bounded(reason),
    ...base,
    ...extra,
  });

  // Not wired, off, or unreadable: the state is unavailable (cleared when evidence exists).
  if (!input.implemented || !input.configured || input.unavailable) {
    const state: PostureState = !input.implemented
      ? 'unavailable'
      : !input.configured
        ? 'disabled'
        : 'unavailable';
    const reason = !input.implemented
      ? 'adaptive orchestration is not wired in this runtime'
      : !input.configured
        ? `options.adaptive_orchestration.enabled is false${evidence ? '; the stored adaptive state is not in force' : ''}`
        : (input.unavailable ?? 'unavailable');
    return {
      session_id: input.sessionId,
      action: evidence ? 'cleared' : 'unknown',
      posture: posture(state, reason),
    };
  }

  const traceAvailable = historyOn && input.history.length > 0;
  const trace = historyOn ? { regulatory_history: historyItems(input.history, input.historyMax) } : {};
  const evaluation = row?.last_evaluation ? { last_monitor_evaluation: row.last_evaluation } : {};
  const hints = row?.hint_sources ? { hint_sources: row.hint_sources } : {};

  if (!row || !evidence) {
    return {
      session_id: input.sessionId,
      action: 'unknown',
      posture: posture(
        'enabled-idle',
        'no adaptive evidence yet: the genome is classified at the first run of the session',
        {
          available: true,
        },
      ),
    };
  }
  if (decoded && !decoded.ok) {
    return {
      session_id: input.sessionId,
      action: 'unknown',
      posture: posture('unknown', `${decoded.reason}; it is not applied`, {
        available: true,
        degraded: true,
        decision_trace_available: traceAvailable,
      }),
      ...evaluation,
      ...trace,
    };
  }
  if (!genome) {
    if (row.last_evaluation && row.last_action !== 'cleared') {
      return {
        session_id: input.sessionId,
        action: 'monitor_evaluation',
        posture: posture(
          'active',
          'monitor only: no effective genome (classifier off); evaluations are recorded',
          {
            available: true,
            active: true,
            decision_trace_available: traceAvailable,
          },
        ),
        ...hints,
        ...evaluation,
        ...trace,
      };
    }
    return {
      session_id: input.sessionId,
      action: 'cleared',
      posture: posture(
        'enabled-idle',
        `adaptive state cleared${row.cleared_reason ? `: ${row.cleared_reason}` : ''}; the next run classifies again`,
        { available: true, decision_trace_available: traceAvailable },
      ),
      ...evaluation,
      ...trace,
    };
  }

  return inForce(
    input.sessionId,
    row,
    genome,
    posture,
    {
      ...hints,
      ...evaluation,
      ...trace,
    },
    traceAvailable,
  );
}

/** The snapshot of a session whose genome is in force. */
function inForce(
  sessionId: string,
  row: AdaptiveRow,
  genome: Genome,
  posture: (state: PostureState, reason: string, extra?: Partial<AdaptivePosture>) => AdaptivePosture,
  extras: Pick<AdaptiveSnapshot, 'hint_sources' | 'last_monitor_evaluation' | 'regulatory_history'>,
  traceAvailable: boolean,
): AdaptiveSnapshot {
  const pending = row.apply_status === 'pending';
  const verdict = efficacyVerdict(row);
  let state: PostureState;
  let reason: string;
  if (row.apply_error) {
    state = 'degraded';
    reason = `the last reshape apply failed and is retried at the next boundary: ${row.apply_error}`;
  } else if (pending) {
    state = 'pending-apply';
    reason = `reshape queued for the next safe boundary: ${row.pending_reason}`;
  } else if (row.reshapes > 0) {
    state = 'applied';
    reason = `reshaped to ${genome.choreography_preset}: ${row.last_reshape_reason}`;
  } else {
    state = 'active';
    reason = `${genome.choreography_preset} genome in force (classified by ${row.classification_source})`;
  }
  const { hint_sources, last_monitor_evaluation, regulatory_history } = extras;
  return {
    session_id: sessionId,
    action: 'updated',
    posture: posture(state, reason, {
      available: true,
      active: true,
      pending_apply: pending,
      applied: !pending && row.reshapes > 0,
      degraded: row.apply_error !== '',
      decision_trace_available: traceAvailable,
      ...(verdict ? { efficacy_verdict: verdict } : {}),
    }),
    classification_source: row.classification_source,
    effective_genome: genome,
    last_reshape_reason: row.last_reshape_reason,
    last_reshape_signal_id: row.last_reshape_signal_id,
    ...(hint_sources !== undefined ? { hint_sources } : {}),
    runtime_apply_status: row.apply_status,
    ...(pending && row.pending_since !== null ? { runtime_apply_pending_since: iso(row.pending_since) } : {}),
    runtime_apply_pending_reason: row.pending_reason,
    ...(row.apply_error ? { runtime_apply_error: row.apply_error } : {}),
    ...(last_monitor_evaluation !== undefined ? { last_monitor_evaluation } : {}),
    ...(regulatory_history !== undefined ? { regulatory_history } : {}),
  };
}

/** The genome's fingerprint, or undefined when the row holds none (or one this svc cannot read). */
export function rowFingerprint(row: AdaptiveRow | undefined): string | undefined {
  const decoded = row ? decodeGenome(row.genome) : undefined;
  return decoded?.ok ? fingerprint(decoded.genome) : undefined;
}
