/**
 * The workflows' repositories that already have a PostgreSQL twin (issue 18), handed to
 * `createWorkflowService` so the app picks the backend: teams and workflow templates.
 * @module
 */
import type { Db } from '../store/db';
import type { SqlClient } from '../store/postgres/client';
import type { Clock, Ids } from '../util/ids';
import { createPostgresTeamStore } from './pg-team-store';
import { createPostgresTemplateStore } from './pg-template-store';
import { createTeamStore, type TeamStore } from './team-store';
import { createTemplateStore, type TemplateStore } from './template-store';

export interface WorkflowStores {
  /** `teams`. */
  teams: TeamStore;
  /** `workflow_templates`. */
  templates: TemplateStore;
}

/** The workflows' repositories on the SQLite database. */
export function createSqliteWorkflowStores(deps: { db: () => Db; clock: Clock; ids: Ids }): WorkflowStores {
  return { teams: createTeamStore(deps), templates: createTemplateStore(deps) };
}

/** The workflows' repositories on PostgreSQL (issue 18). */
export function createPostgresWorkflowStores(deps: {
  sql: SqlClient;
  clock: Clock;
  ids: Ids;
}): WorkflowStores {
  return { teams: createPostgresTeamStore(deps), templates: createPostgresTemplateStore(deps) };
}
