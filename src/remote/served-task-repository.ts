/**
 * The table of tasks this process served as an A2A agent, `a2a_served_tasks`: a task is an agent
 * run, its context a session. The only place that knows how they are stored (./a2a-agent.ts).
 * @module
 */
import type { Db } from '../store/db';

export interface ServedTask {
  task_id: string;
  context_id: string;
  session_id: string;
}

/** Async (issue 18): the SQLite one answers at once. */
export interface ServedTaskRepository {
  insert(task: ServedTask, createdAt: number): Promise<void>;
  get(taskId: string): Promise<ServedTask | undefined>;
  /** The newest task served in a context. */
  latestInContext(contextId: string): Promise<ServedTask | undefined>;
}

export function createServedTaskRepository(db: () => Db): ServedTaskRepository {
  return {
    async insert(task, createdAt) {
      db()
        .prepare(
          'INSERT INTO a2a_served_tasks (task_id, context_id, session_id, created_at) VALUES (?, ?, ?, ?)',
        )
        .run(task.task_id, task.context_id, task.session_id, createdAt);
    },
    get: async (taskId) =>
      db()
        .prepare('SELECT task_id, context_id, session_id FROM a2a_served_tasks WHERE task_id = ?')
        .get(taskId) as ServedTask | undefined,
    latestInContext: async (contextId) =>
      db()
        .prepare(
          'SELECT task_id, context_id, session_id FROM a2a_served_tasks WHERE context_id = ? ORDER BY created_at DESC LIMIT 1',
        )
        .get(contextId) as ServedTask | undefined,
  };
}
