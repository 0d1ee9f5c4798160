/**
 * Small hooks: subscribe to an external store, and load one API resource with its loading and
 * error states (never a blank screen: every view shows one of the three).
 * @module
 */
import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import { errorMessage } from '../api';

export function useExternal<T>(subscribe: (listener: () => void) => () => void, get: () => T): T {
  const [, force] = useState(0);
  useEffect(() => subscribe(() => force((n) => n + 1)), [subscribe]);
  return get();
}

export interface Resource<T> {
  data?: T;
  error?: unknown;
  loading: boolean;
  reload(): void;
}

/** Loads `load()` now and whenever `deps` change; `reload()` loads again (keeping the old data meanwhile). */
export function useResource<T>(load: () => Promise<T>, deps: unknown[]): Resource<T> {
  const [state, setState] = useState<{ data?: T; error?: unknown; loading: boolean }>({ loading: true });
  const generation = useRef(0);
  const run = useCallback(() => {
    const mine = ++generation.current;
    setState((s) => ({ ...s, loading: true }));
    load().then(
      (data) => {
        if (generation.current === mine) setState({ data, loading: false });
      },
      (error: unknown) => {
        if (generation.current === mine) setState((s) => ({ data: s.data, error, loading: false }));
      },
    );
    // biome-ignore lint/correctness/useExhaustiveDependencies: the caller's deps decide when to reload
  }, deps);
  useEffect(() => {
    run();
    return () => {
      generation.current++;
    };
  }, [run]);
  return { ...state, reload: run };
}

export { errorMessage };
