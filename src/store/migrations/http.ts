import type { Migration } from './types';

/** HTTP service and scheduler (ids 300–399): the compat ledger, schedules, service processes. */
export const httpMigrations: Migration[] = [
  {
    id: 300,
    name: 'openai compat request ledger',
    sql: `
      CREATE TABLE openai_compat_requests (
        request_id TEXT PRIMARY KEY,
        run_id TEXT NOT NULL REFERENCES agent_runs(id) ON DELETE CASCADE,
        session_id TEXT NOT NULL,
        requested_model TEXT NOT NULL DEFAULT '',
        model TEXT NOT NULL,
        model_source TEXT NOT NULL,
        stream INTEGER NOT NULL DEFAULT 0,
        include_usage INTEGER NOT NULL DEFAULT 0,
        session_binding TEXT NOT NULL,
        message_count INTEGER NOT NULL DEFAULT 0,
        ignored_fields TEXT NOT NULL DEFAULT '[]',
        status TEXT NOT NULL,
        finish_reason TEXT,
        http_status INTEGER,
        error TEXT,
        prompt_tokens INTEGER NOT NULL DEFAULT 0,
        completion_tokens INTEGER NOT NULL DEFAULT 0,
        created_at INTEGER NOT NULL,
        finished_at INTEGER
      );
      CREATE INDEX openai_compat_requests_created ON openai_compat_requests(created_at);
    `,
  },
  {
    id: 301,
    name: 'scheduler',
    sql: `
      CREATE TABLE schedules (
        id TEXT PRIMARY KEY,
        name TEXT NOT NULL,
        cron TEXT,
        timezone TEXT,
        run_at INTEGER,
        prompt TEXT,
        recipe TEXT,
        recipe_params TEXT NOT NULL DEFAULT '{}',
        session_mode TEXT NOT NULL DEFAULT 'new' CHECK (session_mode IN ('new', 'reuse')),
        session_id TEXT,
        agent TEXT,
        model TEXT,
        status TEXT NOT NULL CHECK (status IN ('active', 'paused', 'completed')),
        next_run_at INTEGER,
        last_run_at INTEGER,
        last_status TEXT,
        last_error TEXT,
        run_count INTEGER NOT NULL DEFAULT 0,
        created_by TEXT NOT NULL DEFAULT 'api',
        created_at INTEGER NOT NULL,
        updated_at INTEGER NOT NULL
      );
      CREATE UNIQUE INDEX schedules_name ON schedules(name);
      CREATE INDEX schedules_due ON schedules(status, next_run_at);
      CREATE TABLE schedule_runs (
        id TEXT PRIMARY KEY,
        schedule_id TEXT NOT NULL REFERENCES schedules(id) ON DELETE CASCADE,
        trigger TEXT NOT NULL CHECK (trigger IN ('cron', 'once', 'manual')),
        due_at INTEGER,
        session_id TEXT,
        run_id TEXT,
        status TEXT NOT NULL,
        error TEXT,
        runner_pid INTEGER,
        started_at INTEGER NOT NULL,
        finished_at INTEGER
      );
      CREATE INDEX schedule_runs_schedule ON schedule_runs(schedule_id, started_at);
    `,
  },
  {
    id: 302,
    name: 'service processes',
    sql: `
      CREATE TABLE service_processes (
        id TEXT PRIMARY KEY,
        kind TEXT NOT NULL,
        pid INTEGER NOT NULL,
        host TEXT NOT NULL,
        url TEXT,
        argv TEXT NOT NULL DEFAULT '[]',
        worker TEXT,
        started_at INTEGER NOT NULL,
        heartbeat_at INTEGER NOT NULL,
        stopped_at INTEGER,
        stop_reason TEXT,
        status TEXT NOT NULL DEFAULT '{}'
      );
      CREATE INDEX service_processes_live ON service_processes(stopped_at, kind);
    `,
  },
  {
    id: 303,
    name: 'service process identity',
    // The registered process's start time and boot id (JSON): stop and restart signal a pid only
    // while it is still that process (src/scheduler/lifecycle.ts). Older rows keep NULL.
    sql: 'ALTER TABLE service_processes ADD COLUMN identity TEXT;',
  },
];
