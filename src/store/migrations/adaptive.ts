import type { Migration } from './types';

/** Adaptive orchestration (readouts II, ids 650–699). */
export const adaptiveMigrations: Migration[] = [
  {
    id: 650,
    name: 'adaptive orchestration genomes',
    sql: `
      -- One row per session with adaptive evidence: its effective genome (NULL when none), how it
      -- was classified, the reshape queued for the next safe boundary, and the monitor's window.
      -- Metadata only: never a prompt, a tool body or a model response.
      CREATE TABLE adaptive_sessions (
        session_id TEXT PRIMARY KEY REFERENCES sessions(id) ON DELETE CASCADE,
        genome TEXT,
        revision INTEGER NOT NULL DEFAULT 0,
        classification_source TEXT NOT NULL DEFAULT '',
        classified_preset TEXT NOT NULL DEFAULT '',
        shadow_preset TEXT NOT NULL DEFAULT '',
        last_reshape_reason TEXT NOT NULL DEFAULT '',
        last_reshape_signal_id TEXT NOT NULL DEFAULT '',
        reshapes INTEGER NOT NULL DEFAULT 0,
        proposal TEXT,
        apply_status TEXT NOT NULL DEFAULT 'applied' CHECK (apply_status IN ('pending', 'applied')),
        pending_since INTEGER,
        pending_reason TEXT NOT NULL DEFAULT '',
        apply_error TEXT NOT NULL DEFAULT '',
        hint_sources TEXT NOT NULL DEFAULT '',
        window_runs TEXT NOT NULL DEFAULT '[]',
        runs_since_eval INTEGER NOT NULL DEFAULT 0,
        last_evaluation TEXT,
        efficacy TEXT,
        plan_gate_revision INTEGER NOT NULL DEFAULT 0,
        last_action TEXT NOT NULL DEFAULT '',
        cleared_reason TEXT NOT NULL DEFAULT '',
        updated_at INTEGER NOT NULL
      );
    `,
  },
  {
    id: 651,
    name: 'adaptive monitor evaluations',
    sql: `
      -- The regulatory history ring (eval_skipped, eval_recorded, reshape_applied) with the
      -- window's signal counts and the eval-shadow score of each recorded evaluation.
      CREATE TABLE adaptive_evaluations (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
        event_kind TEXT NOT NULL CHECK (event_kind IN ('eval_skipped', 'eval_recorded', 'reshape_applied')),
        at INTEGER NOT NULL,
        evaluation TEXT NOT NULL,
        previous_fingerprint TEXT,
        next_fingerprint TEXT,
        effective_preset TEXT NOT NULL DEFAULT '',
        signals TEXT NOT NULL DEFAULT '{}',
        shadow TEXT
      );
      CREATE INDEX adaptive_evaluations_session ON adaptive_evaluations(session_id, id);
    `,
  },
  {
    id: 652,
    name: 'adaptive reviewer passes',
    sql: `
      -- executor_reviewer passes: the reviewed run, the reviewer's child run and its verdict.
      -- findings (the reviewer's answer, capped) only ever go to the executor's next prompt.
      CREATE TABLE adaptive_reviews (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
        run_id TEXT NOT NULL,
        child_session_id TEXT,
        child_run_id TEXT,
        status TEXT NOT NULL CHECK (status IN ('running', 'approved', 'changes_requested', 'failed')),
        findings TEXT NOT NULL DEFAULT '',
        created_at INTEGER NOT NULL,
        finished_at INTEGER
      );
      CREATE INDEX adaptive_reviews_session ON adaptive_reviews(session_id, id);
    `,
  },
];
