import type { Migration } from './types';

/** Runtime health (ids 540–559): health follow-on activations, and lookups of the logs by type. */
export const healthMigrations: Migration[] = [
  {
    id: 540,
    name: 'health follow-on activations',
    sql: `
      -- One row per activation of a health follow-on rule, dispatched or skipped (by a cap, or
      -- because no action could run). Metadata only.
      CREATE TABLE health_activations (
        id TEXT PRIMARY KEY,
        session_id TEXT NOT NULL,
        run_id TEXT,
        signal TEXT NOT NULL,
        rule_id TEXT NOT NULL,
        outcome TEXT NOT NULL CHECK (outcome IN ('dispatched', 'skipped')),
        actions TEXT NOT NULL DEFAULT '[]',
        actions_planned INTEGER NOT NULL,
        actions_run INTEGER NOT NULL,
        reason TEXT,
        ratio REAL,
        event_published INTEGER NOT NULL DEFAULT 0,
        created_at INTEGER NOT NULL
      );
      CREATE INDEX health_activations_time ON health_activations(created_at);
      CREATE INDEX health_activations_session ON health_activations(session_id, created_at);
      -- The health readouts read the session event log by type (loop stops, compactions, flow).
      CREATE INDEX IF NOT EXISTS session_events_type ON session_events(type, id);
    `,
  },
];
