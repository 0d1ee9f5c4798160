/**
 * The session todo lists' table, `session_todos`: the only place that knows how todos are stored.
 * ./todos.ts owns the list's shape (counts, the whole-list replace).
 * @module
 */
import type { Db } from '../store/db';

export interface TodoRow {
  content: string;
  status: 'pending' | 'in_progress' | 'completed' | 'cancelled';
  active_form: string | null;
  updated_at: number;
}

export interface TodoRepository {
  /** The session's todos in list order. */
  list(sessionId: string): Promise<TodoRow[]>;
  /** Replaces the session's todos with these, in one transaction, stamped `updatedAt`. */
  replace(
    sessionId: string,
    todos: readonly { content: string; status: TodoRow['status']; active_form?: string }[],
    updatedAt: number,
  ): Promise<void>;
}

export function createTodoRepository(db: () => Db): TodoRepository {
  return {
    list: async (sessionId) =>
      db()
        .prepare(
          'SELECT content, status, active_form, updated_at FROM session_todos WHERE session_id = ? ORDER BY position',
        )
        .all(sessionId) as TodoRow[],
    async replace(sessionId, todos, updatedAt) {
      const handle = db();
      handle.transaction(() => {
        handle.prepare('DELETE FROM session_todos WHERE session_id = ?').run(sessionId);
        const insert = handle.prepare(
          'INSERT INTO session_todos (session_id, position, content, status, active_form, updated_at) VALUES (?, ?, ?, ?, ?, ?)',
        );
        for (const [i, t] of todos.entries())
          insert.run(sessionId, i, t.content, t.status, t.active_form ?? null, updatedAt);
      })();
    },
  };
}
