/**
 * The provider request timeout (`providers.<id>.timeout_seconds`): how long svc waits for a
 * provider to start answering (the response headers). A server that accepts the connection and
 * never answers would otherwise hold a run forever. Once the answer starts, a long stream is not
 * cut: the timer is cleared as soon as the headers arrive.
 * @module
 */
import { sendOnce } from './request-body';

/** Default wait for the response headers: generous, since local servers load models on demand. */
export const DEFAULT_PROVIDER_TIMEOUT_SECONDS = 600;

export function providerTimeoutSeconds(config: { timeout_seconds?: number } | undefined): number {
  return config?.timeout_seconds ?? DEFAULT_PROVIDER_TIMEOUT_SECONDS;
}

/**
 * A fetch that rejects with a `TimeoutError` (which the AI SDK passes through unwrapped and does
 * not retry) when no response arrives within `seconds`. The caller's own signal still aborts it.
 */
export function withResponseTimeout(fetchFn: typeof fetch, seconds: number, provider: string): typeof fetch {
  const ms = Math.round(seconds * 1000);
  return (async (input: Parameters<typeof fetch>[0], init?: RequestInit) => {
    const controller = new AbortController();
    const timer = setTimeout(() => controller.abort(responseTimeoutError(provider, seconds)), ms);
    const signal = init?.signal ? AbortSignal.any([init.signal, controller.signal]) : controller.signal;
    try {
      return await sendOnce(fetchFn, input, { ...init, signal });
    } finally {
      clearTimeout(timer);
    }
  }) as typeof fetch;
}

/** The error a provider request fails with when no response arrives in time. */
export function responseTimeoutError(provider: string, seconds: number): DOMException {
  return new DOMException(
    `${provider}: no response within ${seconds} s (providers.${provider}.timeout_seconds)`,
    'TimeoutError',
  );
}
