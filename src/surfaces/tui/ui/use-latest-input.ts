/**
 * Every key handler of the TUI subscribes through this hook, never through Ink's `useInput`
 * directly, so a key always reaches the handler of the render that is on screen.
 *
 * Ink subscribes the handler it is given in a passive effect, and React runs the passive effects
 * of Ink's legacy root in a later macrotask than the commit that wrote the frame. A key read in
 * between reaches the previous render's handler and acts on what that render saw (`G` on a readout
 * that just loaded scrolled to line 1; enter on a list whose items just arrived picked nothing).
 * Here Ink holds one stable function for the component's life; it asks the latest committed render
 * whether it takes keys and calls that render's handler, both kept in a ref that a layout effect
 * sets. Layout effects run inside the commit, in the same task as the frame write, so no key can come between the two; and, unlike
 * a ref set during render, a render React throws away never becomes the handler.
 *
 * Two keys in one stdin chunk (↓ then enter, read at once) are not covered by this hook: Ink hands
 * both to the handler in the same task, and React (19, legacy root) renders the first key's state
 * updates only after that task, so the second key reaches the same render's handler. A handler
 * whose keys build on each other writes the state it moves to into a ref as it goes (the prompt's
 * text, a list's cursor, the permission dialog's choice) and reads it from there.
 *
 * A component that mounts (a dialog opening) has no handler Ink knows of until its passive effect
 * subscribes one, so a key read between its first frame and that effect reached nobody: `G` typed
 * as soon as /help appeared was lost (the official CI's first-hour run, stop 55). Under
 * `KeyInputRoot` (./key-input.tsx, the TUI's root) Ink holds one subscription for the app's life
 * and hands each key to the handlers registered now; a component registers in a layout effect, in
 * the commit that writes its first frame, so from that frame on it takes keys. Rendered alone (a
 * component test with no root), a component subscribes to Ink itself as before.
 * @module
 */
import { type Key, useInput } from 'ink';
import { useCallback, useContext, useLayoutEffect, useRef } from 'react';
import { KeyInputRegistry } from './key-input';

export type KeyHandler = (input: string, key: Key) => void;

export interface LatestInputOptions {
  /** false: the handler takes no keys while the render on screen says so. */
  isActive?: boolean;
}

export function useLatestInput(handler: KeyHandler, options: LatestInputOptions = {}): void {
  const isActive = options.isActive !== false;
  const latest = useRef({ handler, isActive });
  useLayoutEffect(() => {
    latest.current = { handler, isActive };
  });
  // Ink would subscribe a handler made active (a dialog closed: the prompt takes keys again) in a
  // passive effect too, and drop a key that comes before it, and keep one made inactive subscribed
  // until then. So the stable function stays subscribed for the component's life and asks the
  // latest render whether it takes keys. (Raw mode stays on meanwhile; the chat screen's ctrl+c
  // handler keeps it on anyway.)
  const stable = useCallback<KeyHandler>((input, key) => {
    if (latest.current.isActive) latest.current.handler(input, key);
  }, []);
  const registry = useContext(KeyInputRegistry);
  useLayoutEffect(() => registry?.add(stable), [registry, stable]);
  useInput(stable, { isActive: registry === undefined });
}
