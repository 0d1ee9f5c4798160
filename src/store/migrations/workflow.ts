import type { Migration } from './types';

/** Recipes, DAGs, teams, workflow templates and worktree overrides (readouts I, ids 560–599). */
export const workflowMigrations: Migration[] = [
  {
    id: 560,
    name: 'workflow runs',
    sql: `
      -- One row per multi-step pipeline (a recipe, a DAG, a workflow template, a CSV fan-out, a
      -- team task). Its own run in agent_runs (run_id) lives in its own session (session_id), and
      -- every step is a sub-agent run whose parent_run_id is that run. input/result are JSON.
      CREATE TABLE workflow_runs (
        id TEXT PRIMARY KEY,
        kind TEXT NOT NULL,
        name TEXT NOT NULL,
        ref TEXT,
        session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
        run_id TEXT NOT NULL,
        parent_run_id TEXT,
        status TEXT NOT NULL,
        input TEXT NOT NULL DEFAULT '{}',
        result TEXT NOT NULL DEFAULT '{}',
        error TEXT,
        created_at INTEGER NOT NULL,
        updated_at INTEGER NOT NULL,
        finished_at INTEGER
      );
      CREATE INDEX workflow_runs_kind_name ON workflow_runs(kind, name, created_at);
      CREATE INDEX workflow_runs_ref ON workflow_runs(ref, created_at);
    `,
  },
  {
    id: 561,
    name: 'teams',
    sql: `
      -- A named team of agent roles: a coordinator and members (JSON), reused by every task.
      CREATE TABLE teams (
        id TEXT PRIMARY KEY,
        name TEXT NOT NULL UNIQUE,
        description TEXT NOT NULL DEFAULT '',
        coordinator TEXT NOT NULL,
        members TEXT NOT NULL,
        created_at INTEGER NOT NULL,
        updated_at INTEGER NOT NULL
      );
    `,
  },
  {
    id: 562,
    name: 'workflow templates',
    sql: `
      -- Saved workflow definitions (orchestrate_workflow): parameters and a DAG of recipe or agent
      -- steps, as validated JSON. revision counts updates.
      CREATE TABLE workflow_templates (
        name TEXT PRIMARY KEY,
        description TEXT NOT NULL DEFAULT '',
        definition TEXT NOT NULL,
        revision INTEGER NOT NULL DEFAULT 1,
        created_at INTEGER NOT NULL,
        updated_at INTEGER NOT NULL
      );
    `,
  },
  {
    id: 563,
    name: 'worktree overrides',
    sql: `
      -- Sub-agents run in a git worktree of the workspace (spawn_worktree_override): where, on
      -- which branch, from which commit, and what became of the worktree.
      CREATE TABLE worktree_overrides (
        id TEXT PRIMARY KEY,
        session_id TEXT,
        child_session_id TEXT,
        run_id TEXT,
        path TEXT NOT NULL,
        workspace_root TEXT NOT NULL,
        branch TEXT NOT NULL,
        base_commit TEXT NOT NULL,
        head_commit TEXT,
        status TEXT NOT NULL,
        files_changed INTEGER NOT NULL DEFAULT 0,
        created_at INTEGER NOT NULL,
        finished_at INTEGER
      );
    `,
  },
];
