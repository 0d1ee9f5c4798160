/**
 * Persistence of adaptive orchestration (svc.db, migrations 650–652): the session row (genome,
 * queued reshape, monitor window), the evaluation ring behind `regulatory_history` and the
 * eval-shadow summary, and the reviewer passes. Every process derives the same snapshot from
 * these rows.
 * @module
 */
import type { Statement } from 'better-sqlite3';
import { memoByDataVersion } from '../store/data-version';
import type { Db } from '../store/db';
import { statementCache } from '../store/statement-cache';
import type { Genome, Preset } from './genome';
import type { RuleName } from './regulator';
import type { WindowSignals } from './signals';

export type Decision = 'recorded' | 'skipped';
export type SkipReason = 'reshape_pending' | 'no_attributable_runs' | 'ledger_unavailable';

/** `last_monitor_evaluation` and `regulatory_history[].evaluation` (spec shape). */
export interface Evaluation {
  /** The cadence in force: evaluate every N ended runs of the session family. */
  cadence: number;
  decision: Decision;
  reason: string;
  signal_id: string;
  skip_reason?: SkipReason;
}

export interface StoredProposal {
  genome: Genome;
  rule: RuleName;
  reason: string;
  signal_id: string;
  /** The genome revision the proposal was made against. */
  base_revision: number;
  recorded_at: number;
  evaluation: Evaluation;
  /** Failure counts of the window the proposal came from: the efficacy baseline. */
  baseline: { failed: number; attributable: number };
}

export interface Efficacy {
  before: { failed: number; attributable: number };
  after: { failed: number; attributable: number };
}

export interface AdaptiveRow {
  session_id: string;
  /** The stored genome JSON (decoded by the reader: a newer svc may have written it). */
  genome: string | null;
  revision: number;
  classification_source: string;
  /** The preset the classifier picked (a pack-sourced genome is re-classified when the pack's changes). */
  classified_preset: string;
  shadow_preset: Preset | '';
  last_reshape_reason: string;
  last_reshape_signal_id: string;
  reshapes: number;
  proposal: StoredProposal | null;
  apply_status: 'pending' | 'applied';
  pending_since: number | null;
  pending_reason: string;
  apply_error: string;
  hint_sources: string;
  /** Ended runs (ids) in the monitor's window, oldest first. */
  window_runs: string[];
  runs_since_eval: number;
  last_evaluation: Evaluation | null;
  efficacy: Efficacy | null;
  /** The genome revision whose plan gate was applied (once per revision). */
  plan_gate_revision: number;
  last_action: '' | 'updated' | 'cleared' | 'monitor_evaluation';
  cleared_reason: string;
  updated_at: number;
}

export type EventKind = 'eval_skipped' | 'eval_recorded' | 'reshape_applied';

export interface ShadowScore {
  preset: Preset;
  /** `hold`, or `reshape:<preset>`. */
  decision: string;
  effective_decision: string;
  agreed: boolean;
}

export interface EvaluationRow {
  id: number;
  session_id: string;
  event_kind: EventKind;
  at: number;
  evaluation: Evaluation;
  previous_fingerprint: string | null;
  next_fingerprint: string | null;
  effective_preset: string;
  signals: Partial<WindowSignals>;
  shadow: ShadowScore | null;
}

export type ReviewStatus = 'running' | 'approved' | 'changes_requested' | 'failed';

export interface ReviewRow {
  id: number;
  session_id: string;
  run_id: string;
  child_session_id: string | null;
  child_run_id: string | null;
  status: ReviewStatus;
  findings: string;
  created_at: number;
  finished_at: number | null;
}

/** Evaluations kept per session: the history ring (at least) and the eval-shadow aggregate. */
export const EVALUATION_RETENTION = 256;

export function emptyRow(sessionId: string, now: number): AdaptiveRow {
  return {
    session_id: sessionId,
    genome: null,
    revision: 0,
    classification_source: '',
    classified_preset: '',
    shadow_preset: '',
    last_reshape_reason: '',
    last_reshape_signal_id: '',
    reshapes: 0,
    proposal: null,
    apply_status: 'applied',
    pending_since: null,
    pending_reason: '',
    apply_error: '',
    hint_sources: '',
    window_runs: [],
    runs_since_eval: 0,
    last_evaluation: null,
    efficacy: null,
    plan_gate_revision: 0,
    last_action: '',
    cleared_reason: '',
    updated_at: now,
  };
}

/** The session rows: the genome, the queued reshape, the monitor window. */
export interface AdaptiveSessionRows {
  get(sessionId: string): Promise<AdaptiveRow | undefined>;
  put(row: AdaptiveRow): Promise<void>;
  all(): Promise<AdaptiveRow[]>;
}

/** The evaluation ring behind `regulatory_history` and the eval-shadow summary. */
export interface AdaptiveEvaluations {
  addEvaluation(row: Omit<EvaluationRow, 'id'>, keep: number): Promise<number>;
  /** Newest first. */
  evaluations(sessionId: string, limit: number): Promise<EvaluationRow[]>;
  /** Newest first, every session when undefined (eval-shadow summary). */
  scored(sessionId: string | undefined, limit: number): Promise<EvaluationRow[]>;
  counts(): Promise<{ recorded: number; skipped: number; reshapes: number }>;
  /** When the last evaluation was recorded (any session), if ever. */
  lastEvaluationAt(): Promise<number | null>;
}

/** The reviewer passes. */
export interface AdaptiveReviews {
  addReview(row: Omit<ReviewRow, 'id'>): Promise<number>;
  updateReview(id: number, patch: Partial<Omit<ReviewRow, 'id' | 'session_id' | 'run_id'>>): Promise<void>;
  reviews(sessionId: string, limit: number): Promise<ReviewRow[]>;
  reviewsOfRuns(runIds: readonly string[]): Promise<ReviewRow[]>;
  reviewByChildRun(childRunId: string): Promise<ReviewRow | undefined>;
  /** Status and child run of every pass, of one session or all. */
  reviewOutcomes(sessionId?: string): Promise<{ status: string; child_run_id: string | null }[]>;
}

/** What one `update` writes: the session row, and with it an evaluation of the ring. */
export interface AdaptiveChange {
  row: AdaptiveRow;
  /** Recorded in the same transaction (the ring keeps the newest `keep` of the session). */
  evaluation?: { row: Omit<EvaluationRow, 'id'>; keep: number };
}

export interface AdaptiveStore extends AdaptiveSessionRows, AdaptiveEvaluations, AdaptiveReviews {
  /**
   * Read-modify-write of a session row in one transaction: `change` (synchronous, no I/O) gets the
   * stored row and returns what to write, or undefined to write nothing. Resolves to the row
   * written (undefined when nothing was). The read and the write are one transaction, so two
   * writers (processes or nodes) never both change the revision they read.
   */
  update(
    sessionId: string,
    change: (current: AdaptiveRow | undefined) => AdaptiveChange | undefined,
  ): Promise<AdaptiveRow | undefined>;
  /**
   * False only when the session surely has no pending reshape proposal, from what the store keeps
   * in memory (PostgreSQL: the sessions with one, kept while no write to `adaptive_sessions` is
   * notified; SQLite: the sessions with one, kept while no other connection committed and this
   * process wrote no row); true when it may (then read the row).
   */
  mayHaveProposal?(sessionId: string): Promise<boolean>;
}

/** A stored `adaptive_sessions` row (JSON columns as text). */
export interface RawAdaptiveRow
  extends Omit<AdaptiveRow, 'proposal' | 'window_runs' | 'last_evaluation' | 'efficacy'> {
  proposal: string | null;
  window_runs: string;
  last_evaluation: string | null;
  efficacy: string | null;
}

/** The columns of `adaptive_sessions`, in the order of `adaptiveRowValues`. */
export const ADAPTIVE_COLUMNS = [
  'session_id',
  'genome',
  'revision',
  'classification_source',
  'classified_preset',
  'shadow_preset',
  'last_reshape_reason',
  'last_reshape_signal_id',
  'reshapes',
  'proposal',
  'apply_status',
  'pending_since',
  'pending_reason',
  'apply_error',
  'hint_sources',
  'window_runs',
  'runs_since_eval',
  'last_evaluation',
  'efficacy',
  'plan_gate_revision',
  'last_action',
  'cleared_reason',
  'updated_at',
] as const;

const json = <T>(text: string | null, fallback: T): T => {
  if (text === null) return fallback;
  try {
    return JSON.parse(text) as T;
  } catch {
    return fallback;
  }
};

/** A stored row decoded (a damaged JSON column reads as its empty value). */
export const decodeAdaptiveRow = (raw: RawAdaptiveRow): AdaptiveRow => ({
  ...raw,
  shadow_preset: raw.shadow_preset as AdaptiveRow['shadow_preset'],
  apply_status: raw.apply_status === 'pending' ? 'pending' : 'applied',
  last_action: raw.last_action as AdaptiveRow['last_action'],
  proposal: json<StoredProposal | null>(raw.proposal, null),
  window_runs: json<string[]>(raw.window_runs, []),
  last_evaluation: json<Evaluation | null>(raw.last_evaluation, null),
  efficacy: json<Efficacy | null>(raw.efficacy, null),
});
/** The values of a row to store, in the order of `ADAPTIVE_COLUMNS`. */
export const adaptiveRowValues = (row: AdaptiveRow): unknown[] => [
  row.session_id,
  row.genome,
  row.revision,
  row.classification_source,
  row.classified_preset,
  row.shadow_preset,
  row.last_reshape_reason,
  row.last_reshape_signal_id,
  row.reshapes,
  row.proposal ? JSON.stringify(row.proposal) : null,
  row.apply_status,
  row.pending_since,
  row.pending_reason,
  row.apply_error,
  row.hint_sources,
  JSON.stringify(row.window_runs),
  row.runs_since_eval,
  row.last_evaluation ? JSON.stringify(row.last_evaluation) : null,
  row.efficacy ? JSON.stringify(row.efficacy) : null,
  row.plan_gate_revision,
  row.last_action,
  row.cleared_reason,
  row.updated_at,
];

/** A stored `adaptive_evaluations` row decoded. */
export const decodeEvaluation = (raw: Record<string, unknown>): EvaluationRow => ({
  id: raw.id as number,
  session_id: raw.session_id as string,
  event_kind: raw.event_kind as EventKind,
  at: raw.at as number,
  evaluation: json<Evaluation>(raw.evaluation as string, {
    cadence: 0,
    decision: 'skipped',
    reason: '',
    signal_id: '',
  }),
  previous_fingerprint: (raw.previous_fingerprint as string | null) ?? null,
  next_fingerprint: (raw.next_fingerprint as string | null) ?? null,
  effective_preset: raw.effective_preset as string,
  signals: json<Partial<WindowSignals>>(raw.signals as string, {}),
  shadow: json<ShadowScore | null>(raw.shadow as string | null, null),
});

export function createAdaptiveStore(db: () => Db): AdaptiveStore {
  const sql = statementCache(db);
  const sync = sessionRowStatements(sql);
  // The sessions with a pending proposal (issue 17 item 3: with the layer off, every idle state
  // asked for its session's row, to clear a proposal that is nearly never there).
  const proposals = memoByDataVersion(
    db,
    (_all: 'proposals') =>
      new Set(
        (
          sql('SELECT session_id FROM adaptive_sessions WHERE proposal IS NOT NULL').all() as {
            session_id: string;
          }[]
        ).map((row) => row.session_id),
      ),
  );
  const rows = sessionRows(sql);
  return {
    ...rows,
    put: async (row) => {
      proposals.invalidate();
      await rows.put(row);
    },
    ...evaluations(sql),
    ...reviews(sql, db),
    mayHaveProposal: async (sessionId) => proposals.get('proposals').has(sessionId),
    // A synchronous better-sqlite3 transaction (a savepoint inside an open one): nothing awaits
    // inside it, so it never waits on another async body's transaction (store/db.ts).
    update: async (sessionId, change) =>
      db().transaction(() => {
        const next = change(sync.get(sessionId));
        if (!next) return undefined;
        proposals.invalidate();
        sync.put(next.row);
        if (next.evaluation) addEvaluation(sql, next.evaluation.row, next.evaluation.keep);
        return next.row;
      })(),
  };
}

type Sql = (text: string) => Statement;

function sessionRowStatements(sql: Sql) {
  const upsert = `INSERT INTO adaptive_sessions (${ADAPTIVE_COLUMNS.join(', ')}) VALUES (${ADAPTIVE_COLUMNS.map(() => '?').join(', ')})
    ON CONFLICT(session_id) DO UPDATE SET ${ADAPTIVE_COLUMNS.slice(1)
      .map((c) => `${c} = excluded.${c}`)
      .join(', ')}`;
  return {
    get(sessionId: string): AdaptiveRow | undefined {
      const raw = sql('SELECT * FROM adaptive_sessions WHERE session_id = ?').get(sessionId) as
        | RawAdaptiveRow
        | undefined;
      return raw ? decodeAdaptiveRow(raw) : undefined;
    },
    put(row: AdaptiveRow): void {
      sql(upsert).run(...adaptiveRowValues(row));
    },
    all(): AdaptiveRow[] {
      return (sql('SELECT * FROM adaptive_sessions ORDER BY session_id').all() as RawAdaptiveRow[]).map(
        decodeAdaptiveRow,
      );
    },
  };
}

function sessionRows(sql: Sql): AdaptiveSessionRows {
  const rows = sessionRowStatements(sql);
  return {
    get: async (sessionId) => rows.get(sessionId),
    put: async (row) => rows.put(row),
    all: async () => rows.all(),
  };
}

function addEvaluation(sql: Sql, row: Omit<EvaluationRow, 'id'>, keep: number): number {
  const id = Number(
    sql(
      `INSERT INTO adaptive_evaluations (session_id, event_kind, at, evaluation, previous_fingerprint,
         next_fingerprint, effective_preset, signals, shadow) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    ).run(
      row.session_id,
      row.event_kind,
      row.at,
      JSON.stringify(row.evaluation),
      row.previous_fingerprint,
      row.next_fingerprint,
      row.effective_preset,
      JSON.stringify(row.signals),
      row.shadow ? JSON.stringify(row.shadow) : null,
    ).lastInsertRowid,
  );
  // The ring: drop what is older than the newest `keep` of the session.
  sql(
    `DELETE FROM adaptive_evaluations WHERE session_id = ? AND id <= coalesce(
       (SELECT id FROM adaptive_evaluations WHERE session_id = ? ORDER BY id DESC LIMIT 1 OFFSET ?), 0)`,
  ).run(row.session_id, row.session_id, keep);
  return id;
}

function evaluations(sql: Sql): AdaptiveEvaluations {
  return {
    addEvaluation: async (row, keep) => addEvaluation(sql, row, keep),
    async evaluations(sessionId, limit) {
      return (
        sql('SELECT * FROM adaptive_evaluations WHERE session_id = ? ORDER BY id DESC LIMIT ?').all(
          sessionId,
          limit,
        ) as Record<string, unknown>[]
      ).map(decodeEvaluation);
    },
    async scored(sessionId, limit) {
      const rows = sessionId
        ? sql(
            'SELECT * FROM adaptive_evaluations WHERE session_id = ? AND shadow IS NOT NULL ORDER BY id DESC LIMIT ?',
          ).all(sessionId, limit)
        : sql('SELECT * FROM adaptive_evaluations WHERE shadow IS NOT NULL ORDER BY id DESC LIMIT ?').all(
            limit,
          );
      return (rows as Record<string, unknown>[]).map(decodeEvaluation);
    },
    async counts() {
      const row = sql(
        `SELECT
           coalesce(sum(event_kind = 'eval_recorded'), 0) AS recorded,
           coalesce(sum(event_kind = 'eval_skipped'), 0) AS skipped,
           coalesce(sum(event_kind = 'reshape_applied'), 0) AS reshapes
         FROM adaptive_evaluations`,
      ).get() as { recorded: number; skipped: number; reshapes: number };
      return row;
    },
    async lastEvaluationAt() {
      return (sql('SELECT max(at) AS at FROM adaptive_evaluations').get() as { at: number | null }).at;
    },
  };
}

function reviews(sql: Sql, db: () => Db): AdaptiveReviews {
  return {
    async addReview(row) {
      return Number(
        sql(
          `INSERT INTO adaptive_reviews (session_id, run_id, child_session_id, child_run_id, status, findings,
             created_at, finished_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
        ).run(
          row.session_id,
          row.run_id,
          row.child_session_id,
          row.child_run_id,
          row.status,
          row.findings,
          row.created_at,
          row.finished_at,
        ).lastInsertRowid,
      );
    },
    async updateReview(id, patch) {
      const sets: string[] = [];
      const params: unknown[] = [];
      for (const [key, value] of Object.entries(patch)) {
        sets.push(`${key} = ?`);
        params.push(value);
      }
      if (sets.length) sql(`UPDATE adaptive_reviews SET ${sets.join(', ')} WHERE id = ?`).run(...params, id);
    },
    async reviews(sessionId, limit) {
      return sql('SELECT * FROM adaptive_reviews WHERE session_id = ? ORDER BY id DESC LIMIT ?').all(
        sessionId,
        limit,
      ) as ReviewRow[];
    },
    async reviewsOfRuns(runIds) {
      if (!runIds.length) return [];
      return db()
        .prepare(`SELECT * FROM adaptive_reviews WHERE run_id IN (${runIds.map(() => '?').join(', ')})`)
        .all(...runIds) as ReviewRow[];
    },
    async reviewByChildRun(childRunId) {
      return sql('SELECT * FROM adaptive_reviews WHERE child_run_id = ?').get(childRunId) as
        | ReviewRow
        | undefined;
    },
    async reviewOutcomes(sessionId) {
      return (
        sessionId
          ? sql('SELECT status, child_run_id FROM adaptive_reviews WHERE session_id = ?').all(sessionId)
          : sql('SELECT status, child_run_id FROM adaptive_reviews').all()
      ) as { status: string; child_run_id: string | null }[];
    },
  };
}
