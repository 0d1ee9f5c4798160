/**
 * The TUI's one subscription to Ink's keys: `KeyInputRoot` subscribes once, for the app's life,
 * and hands each key to the handlers `useLatestInput` registered (./use-latest-input.ts says why:
 * a component that just mounted takes keys from its first frame on).
 *
 * A bracketed paste (the terminal sends `ESC [200~` … `ESC [201~` around pasted text once the TUI
 * asks for it, run.tsx) is collected as it is read and handed on as one input, whatever the
 * size, with `paste: true` on its key: one edit and one render for a paste, not one per chunk
 * the terminal read it in. Its text comes without escape sequences, and an escape sequence that
 * names no key never reaches a handler (./input-filter.ts). A paste past `MAX_PROMPT_CHARS` is
 * handed on as soon as it gets there, with no text and `pasteTooBig` on its key.
 * @module
 */
import { type Key, useInput, useStdin } from 'ink';
import { createContext, type ReactNode, useCallback, useLayoutEffect, useState } from 'react';
import type { EditorKey } from './editor';
import { createInputFilter, type FilterTimers, type InputFilter, PASTE_END } from './input-filter';

export type RegisteredHandler = (input: string, key: Key) => void;

export interface KeyHandlers {
  /** Registers `handler` (in a layout effect); returns its removal. */
  add(handler: RegisteredHandler): () => void;
}

/** The registry of the root this component renders under; undefined rendered alone. */
export const KeyInputRegistry = createContext<KeyHandlers | undefined>(undefined);

export interface KeyInputRootProps {
  children: ReactNode;
  /** The paste idle timer's clock (tests); real timers by default. */
  timers?: FilterTimers;
}

export function KeyInputRoot({ children, timers }: KeyInputRootProps) {
  // Registration order, as Ink's own listeners: a component's handler before its parent's when
  // they mount together (layout effects run children first), an older one before a newer one.
  const [handlers] = useState(() => new Set<RegisteredHandler>());
  const [registry] = useState<KeyHandlers>(() => ({
    add(handler) {
      handlers.add(handler);
      return () => {
        handlers.delete(handler);
      };
    },
  }));
  const filter = useInputFilter(timers);
  const dispatch = useCallback(
    (input: string, key: Key) => {
      const pasted = filter.takePaste();
      const as = pasted === undefined ? key : pasted.tooBig ? TOO_BIG_KEY : PASTE_KEY;
      const text = pasted === undefined ? input : pasted.text;
      // A copy: a handler that unmounts a component (a dialog's esc) does not change this key's round.
      for (const handler of [...handlers]) handler(text, as);
    },
    [handlers, filter],
  );
  useInput(dispatch);
  return <KeyInputRegistry.Provider value={registry}>{children}</KeyInputRegistry.Provider>;
}

export { PASTE_END, PASTE_START } from './input-filter';

const PASTE_KEY: EditorKey = {
  upArrow: false,
  downArrow: false,
  leftArrow: false,
  rightArrow: false,
  pageDown: false,
  pageUp: false,
  home: false,
  end: false,
  return: false,
  escape: false,
  ctrl: false,
  shift: false,
  tab: false,
  backspace: false,
  delete: false,
  meta: false,
  super: false,
  hyper: false,
  capsLock: false,
  numLock: false,
  paste: true,
};

/** A paste too big to hold (no text): the prompt says so (./input-filter.ts). */
const TOO_BIG_KEY: EditorKey = { ...PASTE_KEY, pasteTooBig: true };

/**
 * Ink's raw input events pass through `createInputFilter` (./input-filter.ts) before Ink's own
 * listeners see them: a paste is collected there and handed on as one event, and what names no
 * key is dropped. Ink offers no hook before its key parser (its `useInput` listener threw on an
 * SGR sequence, and an emitter listener cannot stop the others), so its emitter's `emit` is
 * wrapped for the root's life, in a layout effect: before Ink's `useInput` reads stdin.
 */
function useInputFilter(timers: FilterTimers | undefined): InputFilter {
  const { internal_eventEmitter: events } = useStdin();
  const [state] = useState(() => {
    const s = { emit: (_input: string) => {} };
    return { s, filter: createInputFilter(() => s.emit(PASTE_END), timers) };
  });
  useLayoutEffect(() => {
    if (!events) return;
    const emit = events.emit;
    const filtered = function (this: typeof events, name: string | symbol, ...args: unknown[]) {
      if (name !== 'input' || typeof args[0] !== 'string') return emit.call(this, name, ...args);
      const input = state.filter.filter(args[0]);
      return input === undefined ? false : emit.call(this, name, input);
    };
    events.emit = filtered;
    state.s.emit = (input) => events.emit('input', input);
    return () => {
      events.emit = emit;
      state.s.emit = () => {};
      state.filter.dispose();
    };
  }, [events, state]);
  return state.filter;
}
