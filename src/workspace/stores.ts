/**
 * The workspace's repositories, handed to `createWorkspace` so the app picks the backend: the
 * SQLite ones here (the default), PostgreSQL twins beside each repository (issue 18).
 * @module
 */
import type { Db } from '../store/db';
import type { SqlClient } from '../store/postgres/client';
import { createFileHistoryQueries, type FileHistoryQueries } from './file-history-queries';
import { createFileHistoryRepository, type FileHistoryRepository } from './file-history-repository';
import { createFileReadRepository, type FileReadRepository } from './file-read-repository';
import { createPostgresFileHistoryQueries } from './pg-file-history-queries';
import { createPostgresFileHistoryRepository } from './pg-file-history-repository';
import { createPostgresFileReadRepository } from './pg-file-read-repository';
import { createPostgresTodoRepository } from './pg-todo-repository';
import { createTodoRepository, type TodoRepository } from './todo-repository';

export interface WorkspaceStores {
  /** `session_todos`. */
  todos: TodoRepository;
  /** `file_history`: every file change with its before and after. */
  history: FileHistoryRepository;
  /** `file_history`'s aggregate reads for the read models. */
  historyQueries: FileHistoryQueries;
  /** `file_reads`: the read-before-edit records. */
  reads: FileReadRepository;
}

/** The workspace's repositories on the SQLite database. */
export function createSqliteWorkspaceStores(db: () => Db): WorkspaceStores {
  return {
    todos: createTodoRepository(db),
    history: createFileHistoryRepository(db),
    historyQueries: createFileHistoryQueries(db),
    reads: createFileReadRepository(db),
  };
}

/** The workspace's repositories on PostgreSQL (issue 18). */
export function createPostgresWorkspaceStores(deps: { sql: SqlClient }): WorkspaceStores {
  return {
    todos: createPostgresTodoRepository(deps),
    history: createPostgresFileHistoryRepository(deps),
    historyQueries: createPostgresFileHistoryQueries(deps),
    reads: createPostgresFileReadRepository(deps),
  };
}
