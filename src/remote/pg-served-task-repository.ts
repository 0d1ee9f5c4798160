/**
 * The tasks served as an A2A agent on PostgreSQL (issue 18): the twin of
 * ./served-task-repository.ts, the same answers (a missing task or context is undefined; the
 * newest task of a context).
 * @module
 */
import type { SqlClient } from '../store/postgres/client';
import type { ServedTask, ServedTaskRepository } from './served-task-repository';

type Row = ServedTask & Record<string, unknown>;

export function createPostgresServedTaskRepository(deps: { sql: SqlClient }): ServedTaskRepository {
  const { sql } = deps;
  return {
    async insert(task, createdAt) {
      await sql.run(
        'INSERT INTO a2a_served_tasks (task_id, context_id, session_id, created_at) VALUES ($1, $2, $3, $4)',
        [task.task_id, task.context_id, task.session_id, createdAt],
      );
    },
    get: (taskId) =>
      sql.one<Row>('SELECT task_id, context_id, session_id FROM a2a_served_tasks WHERE task_id = $1', [
        taskId,
      ]),
    latestInContext: (contextId) =>
      sql.one<Row>(
        'SELECT task_id, context_id, session_id FROM a2a_served_tasks WHERE context_id = $1 ORDER BY created_at DESC, task_id COLLATE "C" DESC LIMIT 1',
        [contextId],
      ),
  };
}
