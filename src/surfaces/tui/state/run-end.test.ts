import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { whenRunEnds } from './run-end';
import { createTranscriptStore, type TranscriptStore } from './store';
import { initialState, type RunState } from './transcript';

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

let eventId = 0;

function fakeController() {
  let store = createTranscriptStore(initialState(session), { intervalMs: 0 });
  const switches = new Set<() => void>();
  return {
    store: () => store,
    onSwitch(listener: () => void) {
      switches.add(listener);
      return () => switches.delete(listener);
    },
    switchTo(next: TranscriptStore) {
      store = next;
      for (const listener of switches) listener();
    },
    set(state: RunState) {
      const id = ++eventId;
      store.dispatch({
        id,
        session_id: 's',
        type: 'state.changed',
        payload: { session_id: 's', state },
        created_at: 0,
      });
      store.flush();
    },
  };
}

describe('whenRunEnds', () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('calls once a run has ended and the state stayed idle for the delay', () => {
    const controller = fakeController();
    const listener = vi.fn();
    const stop = whenRunEnds(controller, listener, 500);
    controller.set('running');
    controller.set('idle');
    vi.advanceTimersByTime(499);
    expect(listener).not.toHaveBeenCalled();
    vi.advanceTimersByTime(1);
    expect(listener).toHaveBeenCalledTimes(1);
    stop();
  });

  it('calls for a run too quick to be seen running (one frame)', () => {
    const controller = fakeController();
    const listener = vi.fn();
    const stop = whenRunEnds(controller, listener, 500);
    const store = controller.store();
    for (const state of ['running', 'idle'] as const)
      store.dispatch({
        id: ++eventId,
        session_id: 's',
        type: 'state.changed',
        payload: { session_id: 's', state },
        created_at: 0,
      });
    store.flush();
    vi.advanceTimersByTime(500);
    expect(listener).toHaveBeenCalledTimes(1);
    stop();
  });

  it('does not call when the next run starts within the delay, nor without an event', () => {
    const controller = fakeController();
    const listener = vi.fn();
    const stop = whenRunEnds(controller, listener, 500);
    controller.store().update((s) => ({ ...s, title: 'renamed' }));
    controller.store().flush();
    vi.advanceTimersByTime(1000);
    controller.set('running');
    controller.set('idle');
    vi.advanceTimersByTime(200);
    controller.set('running');
    vi.advanceTimersByTime(1000);
    expect(listener).not.toHaveBeenCalled();
    stop();
  });

  it('follows the store of the session switched to, and stops', () => {
    const controller = fakeController();
    const listener = vi.fn();
    const stop = whenRunEnds(controller, listener, 10);
    controller.switchTo(createTranscriptStore(initialState(session), { intervalMs: 0 }));
    controller.set('running');
    controller.set('idle');
    vi.advanceTimersByTime(10);
    expect(listener).toHaveBeenCalledTimes(1);
    stop();
    controller.set('running');
    controller.set('idle');
    vi.advanceTimersByTime(10);
    expect(listener).toHaveBeenCalledTimes(1);
  });
});
