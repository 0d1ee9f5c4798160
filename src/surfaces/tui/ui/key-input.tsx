/**
 * The TUI's one subscription to Ink's keys: `KeyInputRoot` subscribes once, for the app's life,
 * and hands each key to the handlers `useLatestInput` registered (./use-latest-input.ts says why:
 * a component that just mounted takes keys from its first frame on).
 * @module
 */
import { type Key, useInput } from 'ink';
import { createContext, type ReactNode, useCallback, useState } from 'react';

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
  const dispatch = useCallback(
    (input: string, key: Key) => {
      // A copy: a handler that unmounts a component (a dialog's esc) does not change this key's round.
      for (const handler of [...handlers]) handler(input, key);
    },
    [handlers],
  );
  useInput(dispatch);
  return <KeyInputRegistry.Provider value={registry}>{children}</KeyInputRegistry.Provider>;
}
