import type { Migration } from './types';

/** Agent core (ids 200–249): the run ledger, its events, permission grants, agent key/values. */
export const agentMigrations: Migration[] = [
  {
    id: 200,
    name: 'agent run ledger',
    sql: `
      CREATE TABLE agent_runs (
        id TEXT PRIMARY KEY,
        session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
        parent_run_id TEXT,
        family_session_id TEXT NOT NULL,
        status TEXT NOT NULL
          CHECK (status IN ('queued', 'running', 'completed', 'failed', 'cancelled', 'interrupted')),
        agent TEXT NOT NULL,
        model TEXT,
        origin TEXT NOT NULL,
        prompt TEXT NOT NULL DEFAULT '',
        options TEXT NOT NULL DEFAULT '{}',
        reason TEXT,
        error TEXT,
        steps INTEGER NOT NULL DEFAULT 0,
        input_tokens INTEGER NOT NULL DEFAULT 0,
        output_tokens INTEGER NOT NULL DEFAULT 0,
        reasoning_tokens INTEGER NOT NULL DEFAULT 0,
        cached_input_tokens INTEGER NOT NULL DEFAULT 0,
        cost REAL NOT NULL DEFAULT 0,
        result_message_id TEXT,
        pid INTEGER,
        host TEXT,
        runner TEXT,
        cancel_requested INTEGER NOT NULL DEFAULT 0,
        created_at INTEGER NOT NULL,
        started_at INTEGER,
        finished_at INTEGER,
        updated_at INTEGER NOT NULL
      );
      CREATE INDEX agent_runs_session ON agent_runs(session_id, created_at);
      CREATE INDEX agent_runs_family ON agent_runs(family_session_id, created_at);
      CREATE INDEX agent_runs_status ON agent_runs(status);
      CREATE INDEX agent_runs_parent ON agent_runs(parent_run_id);

      CREATE TABLE agent_run_events (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        run_id TEXT NOT NULL REFERENCES agent_runs(id) ON DELETE CASCADE,
        session_id TEXT NOT NULL,
        seq INTEGER NOT NULL,
        type TEXT NOT NULL,
        payload TEXT NOT NULL DEFAULT '{}',
        created_at INTEGER NOT NULL
      );
      CREATE UNIQUE INDEX agent_run_events_run ON agent_run_events(run_id, seq);
      CREATE INDEX agent_run_events_type ON agent_run_events(type, id);
    `,
  },
  {
    id: 201,
    name: 'permission grants and agent state',
    sql: `
      CREATE TABLE permission_grants (
        session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
        tool TEXT NOT NULL,
        scope TEXT NOT NULL,
        created_at INTEGER NOT NULL,
        PRIMARY KEY (session_id, tool, scope)
      );
      CREATE TABLE agent_state (
        key TEXT PRIMARY KEY,
        value TEXT NOT NULL,
        updated_at INTEGER NOT NULL
      );
    `,
  },
  {
    id: 202,
    name: 'classified run failure',
    // JSON { code, summary, next, details } (src/agent/failure.ts); NULL unless the run failed.
    sql: 'ALTER TABLE agent_runs ADD COLUMN failure TEXT;',
  },
];
