import type { Migration } from './types';

/** Operating packs (readouts II, ids 600–649). */
export const packsMigrations: Migration[] = [
  {
    id: 600,
    name: 'session operating packs',
    sql: `
      -- One row per session that ever touched its operating mode. The pack reference (name, path,
      -- preset) persists so another process can hydrate it; summary is metadata only (counts and
      -- names), never preamble text, hook commands or policy rules.
      CREATE TABLE session_operating_packs (
        session_id TEXT PRIMARY KEY REFERENCES sessions(id) ON DELETE CASCADE,
        active INTEGER NOT NULL DEFAULT 0,
        pack_name TEXT NOT NULL DEFAULT '',
        requested TEXT NOT NULL DEFAULT '',
        manifest_path TEXT NOT NULL DEFAULT '',
        source TEXT NOT NULL DEFAULT '',
        preset_id TEXT NOT NULL DEFAULT '',
        digest TEXT NOT NULL DEFAULT '',
        summary TEXT NOT NULL DEFAULT '{}',
        ref_revision INTEGER NOT NULL DEFAULT 0,
        last_action TEXT NOT NULL DEFAULT '',
        failure_state TEXT NOT NULL DEFAULT '',
        failure_reason TEXT NOT NULL DEFAULT '',
        diagnostics TEXT NOT NULL DEFAULT '[]',
        updated_at INTEGER NOT NULL
      );
    `,
  },
  {
    id: 601,
    name: 'pack hook runs',
    sql: `
      -- Outcomes of pack hooks: never the command, its output or its environment.
      CREATE TABLE pack_hook_runs (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
        pack_name TEXT NOT NULL,
        hook_index INTEGER NOT NULL,
        event TEXT NOT NULL,
        event_id INTEGER,
        status TEXT NOT NULL CHECK (status IN ('ok', 'failed', 'timeout', 'error')),
        exit_code INTEGER,
        duration_ms INTEGER NOT NULL,
        started_at INTEGER NOT NULL
      );
      CREATE INDEX pack_hook_runs_session ON pack_hook_runs(session_id, id);
    `,
  },
];
