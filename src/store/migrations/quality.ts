import type { Migration } from './types';

/** Quality (ids 750–799): apply_patch log, edit capsules, finding lifecycle. */
export const qualityMigrations: Migration[] = [
  {
    id: 750,
    name: 'apply_patch log',
    sql: `
      CREATE TABLE apply_patch_log (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        session_id TEXT,
        run_id TEXT,
        format TEXT NOT NULL,
        outcome TEXT NOT NULL CHECK (outcome IN ('applied', 'failed')),
        files TEXT NOT NULL,
        file_count INTEGER NOT NULL,
        additions INTEGER NOT NULL DEFAULT 0,
        deletions INTEGER NOT NULL DEFAULT 0,
        fuzzy_hunks INTEGER NOT NULL DEFAULT 0,
        error_code TEXT,
        reason TEXT,
        failed_path TEXT,
        failed_hunk INTEGER,
        error_message TEXT,
        created_at INTEGER NOT NULL
      );
      CREATE INDEX apply_patch_log_session ON apply_patch_log(session_id, id);
    `,
  },
  {
    id: 751,
    name: 'edit capsules',
    sql: `
      CREATE TABLE edit_capsules (
        id TEXT PRIMARY KEY,
        session_id TEXT NOT NULL,
        run_id TEXT NOT NULL UNIQUE,
        parent_run_id TEXT,
        status TEXT NOT NULL CHECK (status IN ('recording', 'open', 'reverted')),
        run_status TEXT,
        checkpoint_id TEXT,
        checkpoint_note TEXT,
        files TEXT NOT NULL DEFAULT '[]',
        file_count INTEGER NOT NULL DEFAULT 0,
        additions INTEGER NOT NULL DEFAULT 0,
        deletions INTEGER NOT NULL DEFAULT 0,
        created_at INTEGER NOT NULL,
        closed_at INTEGER,
        reverted_at INTEGER,
        reverted_by_session_id TEXT,
        revert_history_ids TEXT
      );
      CREATE INDEX edit_capsules_session ON edit_capsules(session_id, created_at);
      -- A capsule gathers a run's changes from the file history.
      CREATE INDEX IF NOT EXISTS file_history_run ON file_history(run_id, id);
    `,
  },
  {
    id: 752,
    name: 'finding lifecycle',
    sql: `
      CREATE TABLE findings (
        id TEXT PRIMARY KEY,
        kind TEXT NOT NULL CHECK (kind IN ('check', 'diagnostic', 'reported')),
        fingerprint TEXT NOT NULL UNIQUE,
        state TEXT NOT NULL CHECK (state IN ('open', 'acknowledged', 'fixed', 'waived', 'stale')),
        title TEXT NOT NULL,
        detail TEXT,
        severity TEXT NOT NULL,
        path TEXT,
        line INTEGER,
        check_key TEXT,
        check_command TEXT,
        check_kind TEXT,
        session_id TEXT,
        run_id TEXT,
        last_session_id TEXT,
        last_run_id TEXT,
        occurrences INTEGER NOT NULL DEFAULT 1,
        first_seen_at INTEGER NOT NULL,
        last_seen_at INTEGER NOT NULL,
        state_changed_at INTEGER NOT NULL
      );
      CREATE INDEX findings_state ON findings(state, last_seen_at);
      CREATE INDEX findings_check ON findings(check_key);
      CREATE INDEX findings_path ON findings(path);

      CREATE TABLE finding_events (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        finding_id TEXT NOT NULL,
        from_state TEXT,
        to_state TEXT NOT NULL,
        reason TEXT NOT NULL,
        source TEXT NOT NULL,
        session_id TEXT,
        run_id TEXT,
        created_at INTEGER NOT NULL
      );
      CREATE INDEX finding_events_finding ON finding_events(finding_id, id);
      CREATE INDEX finding_events_session ON finding_events(session_id, id);
    `,
  },
];
