/**
 * The workflows' repositories (issue 18), handed to `createWorkflowService` so the app picks the
 * backend: teams, workflow templates, workflow runs, worktree overrides, and the workspace
 * repositories a worktree override's second workspace records in.
 * @module
 */
import type { Db } from '../store/db';
import type { SqlClient } from '../store/postgres/client';
import type { Clock, Ids } from '../util/ids';
import {
  createPostgresWorkspaceStores,
  createSqliteWorkspaceStores,
  type WorkspaceStores,
} from '../workspace/stores';
import { createPostgresTeamStore } from './pg-team-store';
import { createPostgresTemplateStore } from './pg-template-store';
import { createPostgresWorkflowRunRepository } from './pg-workflow-runs-repository';
import { createPostgresWorktreeStore } from './pg-worktree-store';
import { createTeamStore, type TeamStore } from './team-store';
import { createTemplateStore, type TemplateStore } from './template-store';
import { createWorkflowRunRepository, type WorkflowRunRepository } from './workflow-runs-repository';
import { createWorktreeStore, type WorktreeStore } from './worktree-store';

export interface WorkflowStores {
  /** `teams`. */
  teams: TeamStore;
  /** `workflow_templates`. */
  templates: TemplateStore;
  /** `workflow_runs`. */
  runs: WorkflowRunRepository;
  /** `worktree_overrides`. */
  worktrees: WorktreeStore;
  /** The workspace's repositories, for the workspace a worktree override builds over its worktree. */
  worktreeWorkspace: WorkspaceStores;
}

/** The workflows' repositories on the SQLite database. */
export function createSqliteWorkflowStores(deps: { db: () => Db; clock: Clock; ids: Ids }): WorkflowStores {
  return {
    teams: createTeamStore(deps),
    templates: createTemplateStore(deps),
    runs: createWorkflowRunRepository(deps.db),
    worktrees: createWorktreeStore(deps),
    worktreeWorkspace: createSqliteWorkspaceStores(deps.db),
  };
}

/** The workflows' repositories on PostgreSQL (issue 18). */
export function createPostgresWorkflowStores(deps: {
  sql: SqlClient;
  clock: Clock;
  ids: Ids;
}): WorkflowStores {
  return {
    teams: createPostgresTeamStore(deps),
    templates: createPostgresTemplateStore(deps),
    runs: createPostgresWorkflowRunRepository(deps),
    worktrees: createPostgresWorktreeStore(deps),
    worktreeWorkspace: createPostgresWorkspaceStores(deps),
  };
}
