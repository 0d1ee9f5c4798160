import { describe, expect, it } from 'vitest';
import { createTranscriptStore } from './store';
import { initialState, settledCount } from './transcript';

const session = {
  id: 's',
  title: 't',
  model: null,
  mode: 'build',
  agent: 'build',
  parent_id: null,
  prompt_tokens: 0,
  completion_tokens: 0,
  cost: 0,
  created_at: 0,
  updated_at: 0,
};

describe('transcript store', () => {
  it('coalesces a burst of streamed deltas into one render per frame', () => {
    const timers: (() => void)[] = [];
    const store = createTranscriptStore(initialState(session), {
      setTimer: (fn) => timers.push(fn),
      clearTimer: () => {},
    });
    let renders = 0;
    store.subscribe(() => renders++);
    for (let i = 1; i <= 1000; i++) {
      store.dispatch({
        id: i,
        session_id: 's',
        type: 'message.delta',
        payload: { session_id: 's', message_id: 'm', run_id: 'r', part: 'text', delta: 'x' },
        created_at: 0,
      });
    }
    expect(timers).toHaveLength(1);
    expect(renders).toBe(0);
    timers[0]();
    expect(renders).toBe(1);
    const item = store.getSnapshot().items[0];
    expect(item).toMatchObject({ kind: 'assistant', done: false });
    expect(item.kind === 'assistant' && item.text.length).toBe(1000);
    // Replayed events already applied are ignored.
    store.dispatch({
      id: 5,
      session_id: 's',
      type: 'message.delta',
      payload: { session_id: 's', message_id: 'm', run_id: 'r', part: 'text', delta: 'y' },
      created_at: 0,
    });
    store.flush();
    expect(renders).toBe(1);
  });

  it('settles items in order: a running tool holds back what follows it', () => {
    const store = createTranscriptStore(initialState(session), { setTimer: () => 0, clearTimer: () => {} });
    const e = (id: number, type: string, payload: Record<string, unknown>) =>
      store.dispatch({ id, session_id: 's', type, payload: { session_id: 's', ...payload }, created_at: 0 });
    e(1, 'message.created', { message_id: 'm', role: 'assistant' });
    e(2, 'message.delta', { message_id: 'm', run_id: 'r', part: 'text', delta: 'hi' });
    e(3, 'tool.started', { run_id: 'r', tool_call_id: 'c', tool: 'view', title: 'view a' });
    e(4, 'loop.detected', { run_id: 'r', tool: 'view', repeats: 3 });
    store.flush();
    expect(settledCount(store.getSnapshot().items)).toBe(1);
    e(5, 'tool.finished', {
      run_id: 'r',
      tool_call_id: 'c',
      tool: 'view',
      is_error: false,
      duration_ms: 1,
      summary: 'ok',
    });
    store.flush();
    expect(settledCount(store.getSnapshot().items)).toBe(3);
    e(6, 'run.finished', {
      run_id: 'r',
      status: 'failed',
      reason: 'provider 401',
      steps: 1,
      usage: { input_tokens: 1, output_tokens: 2 },
      cost: 0,
    });
    store.flush();
    expect(store.getSnapshot().items.at(-1)).toMatchObject({
      kind: 'notice',
      level: 'error',
      text: 'run failed: provider 401',
    });
  });
});
