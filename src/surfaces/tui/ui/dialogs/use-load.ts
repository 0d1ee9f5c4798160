/**
 * Loading a readout with a time limit: the call gets an AbortSignal that fires at the limit, and
 * the view stops waiting at the limit even if the source ignores the signal.
 * @module
 */
import { useCallback, useEffect, useRef, useState } from 'react';
import { SvcError, toSvcError } from '../../../../errors';
import { isMissingTool, isUnavailable } from '../../client';

export type LoadState<T> =
  | { status: 'loading' }
  | { status: 'ready'; value: T; loadedAt: number }
  | { status: 'error'; message: string; unavailable: boolean };

export function withTimeout<T>(run: (signal: AbortSignal) => Promise<T>, ms: number): Promise<T> {
  const controller = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  const limit = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      controller.abort();
      reject(new SvcError('timeout', `load timed out after ${ms / 1000} s (r retries)`));
    }, ms);
  });
  return Promise.race([run(controller.signal), limit]).finally(() => clearTimeout(timer));
}

export function useLoad<T>(
  run: (signal: AbortSignal) => Promise<T>,
  timeoutMs: number,
  clock: () => number = Date.now,
) {
  const [state, setState] = useState<LoadState<T>>({ status: 'loading' });
  const generation = useRef(0);
  const runRef = useRef(run);
  runRef.current = run;
  const reload = useCallback(() => {
    const mine = ++generation.current;
    setState({ status: 'loading' });
    withTimeout((signal) => runRef.current(signal), timeoutMs).then(
      (value) => {
        if (generation.current === mine) setState({ status: 'ready', value, loadedAt: clock() });
      },
      (error) => {
        if (generation.current !== mine) return;
        setState({ status: 'error', message: toSvcError(error).message, unavailable: isUnavailable(error) });
      },
    );
  }, [timeoutMs, clock]);
  useEffect(() => {
    reload();
    return () => {
      generation.current++;
    };
  }, [reload]);
  return { state, reload };
}

/** One line for a failed load: what is missing (and how to turn it on), or what went wrong. */
export function unavailableText(error: unknown): string {
  const message = toSvcError(error).message;
  if (message.includes('options.operating_packs is false'))
    return 'operating packs are off: set options.operating_packs = true in svc.toml';
  return isMissingTool(error) ? `not available: ${message}` : message;
}
