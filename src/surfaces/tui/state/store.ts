/**
 * The transcript store: applies events as they arrive but tells React at most once per frame
 * (default 33 ms), so a model streaming thousands of deltas a second costs a handful of renders,
 * not a render per token (peers' "render loop pegging a core").
 * @module
 */
import type { SessionEvent } from '../../../events/bus';
import { applyEvent, type TranscriptState } from './transcript';

export interface TranscriptStore {
  getSnapshot(): TranscriptState;
  subscribe(listener: () => void): () => void;
  dispatch(event: SessionEvent): void;
  update(fn: (state: TranscriptState) => TranscriptState): void;
  /** Notify now (tests, and before a screen change). */
  flush(): void;
  dispose(): void;
}

export interface StoreOptions {
  intervalMs?: number;
  setTimer?: (fn: () => void, ms: number) => unknown;
  clearTimer?: (handle: unknown) => void;
}

export function createTranscriptStore(initial: TranscriptState, options: StoreOptions = {}): TranscriptStore {
  const intervalMs = options.intervalMs ?? 33;
  const setTimer = options.setTimer ?? ((fn, ms) => setTimeout(fn, ms));
  const clearTimer = options.clearTimer ?? ((h) => clearTimeout(h as NodeJS.Timeout));
  let state = initial;
  let published = initial;
  let timer: unknown;
  let disposed = false;
  const listeners = new Set<() => void>();

  const flush = () => {
    if (timer !== undefined) clearTimer(timer);
    timer = undefined;
    if (disposed || published === state) return;
    published = state;
    for (const listener of [...listeners]) listener();
  };
  const schedule = () => {
    if (disposed || timer !== undefined) return;
    timer = setTimer(flush, intervalMs);
  };

  return {
    getSnapshot: () => published,
    subscribe(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    dispatch(event) {
      state = applyEvent(state, event);
      schedule();
    },
    update(fn) {
      state = fn(state);
      schedule();
    },
    flush,
    dispose() {
      disposed = true;
      if (timer !== undefined) clearTimer(timer);
      timer = undefined;
      listeners.clear();
    },
  };
}
