/**
 * The TUI's one subscription to Ink's keys: `KeyInputRoot` subscribes once, for the app's life,
 * and hands each key to the handlers `useLatestInput` registered (./use-latest-input.ts says why:
 * a component that just mounted takes keys from its first frame on).
 *
 * A bracketed paste (the terminal sends `ESC [200~` … `ESC [201~` around pasted text once the TUI
 * asks for it, run.tsx) is collected here as it is read and handed on as one input, whatever the
 * size, with `paste: true` on its key: one edit and one render for a paste, not one per chunk
 * the terminal read it in.
 * @module
 */
import { type Key, useInput, useStdin } from 'ink';
import { createContext, type ReactNode, useCallback, useEffect, useState } from 'react';
import type { EditorKey } from './editor';

export type RegisteredHandler = (input: string, key: Key) => void;

export interface KeyHandlers {
  /** Registers `handler` (in a layout effect); returns its removal. */
  add(handler: RegisteredHandler): () => void;
}

/** The registry of the root this component renders under; undefined rendered alone. */
export const KeyInputRegistry = createContext<KeyHandlers | undefined>(undefined);

export function KeyInputRoot({ children }: { children: ReactNode }) {
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
  const paste = useBracketedPaste();
  const dispatch = useCallback(
    (input: string, key: Key) => {
      const taken = paste.take();
      if (taken === null) return;
      const [text, as] = taken === undefined ? [input, key] : [taken, PASTE_KEY];
      // A copy: a handler that unmounts a component (a dialog's esc) does not change this key's round.
      for (const handler of [...handlers]) handler(text, as);
    },
    [handlers, paste],
  );
  useInput(dispatch);
  return <KeyInputRegistry.Provider value={registry}>{children}</KeyInputRegistry.Provider>;
}

export const PASTE_START = '\x1b[200~';
export const PASTE_END = '\x1b[201~';

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

/**
 * Ink's raw input events (one per key or text run, as its parser splits what it read), watched
 * before Ink's own key listener sees them (prepended): the markers and what comes between them go
 * into the paste. `take()`, asked for each key Ink hands on: undefined for a key that is no part
 * of a paste, null for one that is (nothing to hand on yet), the whole text on the paste's end.
 */
function useBracketedPaste() {
  const { internal_eventEmitter: events } = useStdin();
  const [state] = useState(() => {
    const s = { parts: undefined as string[] | undefined, event: undefined as string | null | undefined };
    return {
      raw(input: string) {
        if (input === PASTE_START && !s.parts) {
          s.parts = [];
          s.event = null;
        } else if (!s.parts) s.event = undefined;
        else if (input === PASTE_END) {
          s.event = s.parts.join('');
          s.parts = undefined;
        } else {
          s.parts.push(input);
          s.event = null;
        }
      },
      take(): string | null | undefined {
        const event = s.event;
        s.event = undefined;
        return event;
      },
    };
  });
  useEffect(() => {
    events?.prependListener('input', state.raw);
    return () => {
      events?.removeListener('input', state.raw);
    };
  }, [events, state]);
  return state;
}
