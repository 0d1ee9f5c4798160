/**
 * `todos` (family planning): the session's task list, read or replaced whole.
 * @module
 */
import { z } from 'zod';
import { resolveSession } from '../sessions/resolve-session';
import { sessionIdInput } from '../sessions/session-input';
import type { TodoList } from '../workspace/todos';
import { defineTool } from './core/define-tool';

export const todosInput = () =>
  z.strictObject({
    todos: z
      .array(
        z.strictObject({
          content: z.string().min(1).max(500).describe('The task, imperative: "Add a test for parseConfig".'),
          status: z
            .enum(['pending', 'in_progress', 'completed', 'cancelled'])
            .describe('pending, in_progress (what you are doing now), completed, or cancelled.'),
          active_form: z
            .string()
            .max(500)
            .optional()
            .describe(
              'Present-tense form shown while in progress: "Adding a test for parseConfig". Optional.',
            ),
        }),
      )
      .max(100)
      .optional()
      .describe(
        'The complete new list, replacing the old one (include unchanged items). Omit to read the current list.',
      ),
    session_id: sessionIdInput('context', 'Session whose list to use. Omit for the current session.'),
  });

export const todos = defineTool({
  name: 'todos',
  examples: [{ session_id: 'ses_0001' }],
  family: 'planning',
  tag: 'primitive',
  description:
    'Keep a todo list for this session: plan multi-step work, mark one task in_progress while you do it, and completed as soon as it is done. Send the whole list each time (it replaces the previous one); call without todos to read it. Use it for tasks with three or more steps, not for single trivial actions.',
  input: todosInput,
  mutates: false,
  surfaces: { mcp: 'svc_todos' },
  async run(ctx, input): Promise<TodoList> {
    const sessionId = (
      await resolveSession(ctx.app, input, {
        onMissing: 'context',
        context: ctx.sessionId,
        required: 'session_id: todos belong to a session; give session_id or call from a session',
      })
    ).session_id;
    if (input.todos === undefined) return await ctx.app.ws.todos.get(sessionId);
    return await ctx.app.ws.todos.replace(sessionId, input.todos);
  },
  toModelOutput(result) {
    if (result.todos.length === 0) return 'The todo list is empty.';
    const mark = { pending: '[ ]', in_progress: '[>]', completed: '[x]', cancelled: '[-]' } as const;
    const lines = result.todos.map((t) => `${mark[t.status]} ${t.content}`);
    const c = result.counts;
    return `${lines.join('\n')}\n(${c.completed} done, ${c.in_progress} in progress, ${c.pending} pending${c.cancelled ? `, ${c.cancelled} cancelled` : ''})`;
  },
});
