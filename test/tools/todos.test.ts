/**
 * todos: the session task list is read or replaced whole, per session, and needs a session.
 */
import { describe, expect, it } from 'vitest';
import { toolHarness } from './harness';

describe('todos', () => {
  it('replaces and reads the list of the calling session', async () => {
    const h = await toolHarness();
    expect(await h.call('todos', {})).toMatchObject({ session_id: 'ses_test', todos: [], updated_at: null });
    const list = await h.call('todos', {
      todos: [
        { content: 'Read the parser', status: 'completed' },
        { content: 'Add a test', status: 'in_progress', active_form: 'Adding a test' },
        { content: 'Run the suite', status: 'pending' },
      ],
    });
    expect(list.counts).toEqual({ pending: 1, in_progress: 1, completed: 1, cancelled: 0 });
    expect(h.modelText('todos', list)).toBe(
      '[x] Read the parser\n[>] Add a test\n[ ] Run the suite\n(1 done, 1 in progress, 1 pending)',
    );
    expect((await h.call('todos', {})).todos).toEqual([
      { content: 'Read the parser', status: 'completed' },
      { content: 'Add a test', status: 'in_progress', active_form: 'Adding a test' },
      { content: 'Run the suite', status: 'pending' },
    ]);
    expect((await h.call('todos', {}, { sessionId: 'ses_other' })).todos).toEqual([]);
    await h.call('todos', { todos: [] });
    expect((await h.call('todos', {})).todos).toEqual([]);
  });

  it('needs a session, and rejects bad statuses by field', async () => {
    const h = await toolHarness();
    await expect(h.call('todos', {}, { sessionId: undefined })).rejects.toThrow(
      /session_id: todos belong to a session/,
    );
    await expect(h.call('todos', { session_id: 'ses_missing' })).rejects.toMatchObject({ code: 'not_found' });
    await expect(h.call('todos', { todos: [{ content: 'x', status: 'done' }] })).rejects.toThrow(
      /todos\.0\.status/,
    );
  });
});
