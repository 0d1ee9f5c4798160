/**
 * The session todo list (`todos` tool): an ordered list of tasks with a status, replaced whole on
 * each write so the model always states the full plan. Stored in svc.db per session.
 * @module
 */
import type { Clock } from '../util/ids';
import type { TodoRepository } from './todo-repository';

export type TodoStatus = 'pending' | 'in_progress' | 'completed' | 'cancelled';

export interface Todo {
  content: string;
  status: TodoStatus;
  /** Present-tense form shown while the task is in progress ("Running the tests"). */
  active_form?: string;
}

export interface TodoList {
  session_id: string;
  todos: Todo[];
  counts: Record<TodoStatus, number>;
  updated_at: number | null;
}

export interface TodoStore {
  get(sessionId: string): Promise<TodoList>;
  replace(sessionId: string, todos: Todo[]): Promise<TodoList>;
}

export function createTodoStore(deps: { todos: TodoRepository; clock: Clock }): TodoStore {
  const repository = deps.todos;
  const get = async (sessionId: string): Promise<TodoList> => {
    const rows = await repository.list(sessionId);
    const todos = rows.map((r) => ({
      content: r.content,
      status: r.status,
      ...(r.active_form ? { active_form: r.active_form } : {}),
    }));
    const counts = { pending: 0, in_progress: 0, completed: 0, cancelled: 0 };
    for (const t of todos) counts[t.status]++;
    return {
      session_id: sessionId,
      todos,
      counts,
      updated_at: rows.length ? Math.max(...rows.map((r) => r.updated_at)) : null,
    };
  };
  return {
    get,
    async replace(sessionId, todos) {
      const now = deps.clock.now();
      await repository.replace(sessionId, todos, now);
      const list = await get(sessionId);
      return { ...list, updated_at: now };
    },
  };
}
