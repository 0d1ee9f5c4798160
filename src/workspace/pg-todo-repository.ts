/**
 * `session_todos` on PostgreSQL (issue 18): the twin of ./todo-repository.ts, the same answers
 * (list order by position, `active_form` null when absent), the whole-list replace in one
 * transaction.
 * @module
 */
import type { SqlClient } from '../store/postgres/client';
import type { TodoRepository, TodoRow } from './todo-repository';

export function createPostgresTodoRepository(deps: { sql: SqlClient }): TodoRepository {
  const { sql } = deps;
  return {
    list: (sessionId) =>
      sql.query<TodoRow & Record<string, unknown>>(
        'SELECT content, status, active_form, updated_at FROM session_todos WHERE session_id = $1 ORDER BY position',
        [sessionId],
      ),
    replace: (sessionId, todos, updatedAt) =>
      sql.transaction(async (tx) => {
        await tx.run('DELETE FROM session_todos WHERE session_id = $1', [sessionId]);
        for (const [i, t] of todos.entries()) {
          await tx.run(
            'INSERT INTO session_todos (session_id, position, content, status, active_form, updated_at) VALUES ($1, $2, $3, $4, $5, $6)',
            [sessionId, i, t.content, t.status, t.active_form ?? null, updatedAt],
          );
        }
      }),
  };
}
