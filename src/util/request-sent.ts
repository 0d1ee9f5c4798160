/**
 * "The model request has left": a callback per abort signal, called by the HTTP transport that
 * sends a request carrying that signal (src/providers/http-transport.ts) right after the request's
 * bytes were handed to the socket. A run's signal travels with its model calls, so a caller that
 * knows the run (the compat stream's head, src/surfaces/http/compat/stream-answer.ts) can do what
 * the model request does not need after it, instead of before it. One callback per signal, called
 * once; a transport that never sends (another provider's fetch, a run that ends first) never
 * calls it, so a caller always keeps a fallback of its own.
 * @module
 */

const waiting = new WeakMap<AbortSignal, () => void>();

/** Call `fn` once, after the next request sent with `signal` was written (replaces an earlier one). */
export function whenRequestSent(signal: AbortSignal, fn: () => void): void {
  waiting.set(signal, fn);
}

/** Forget the callback of `signal` (the caller did its work some other way). */
export function forgetRequestSent(signal: AbortSignal, fn: () => void): void {
  if (waiting.get(signal) === fn) waiting.delete(signal);
}

/**
 * The transport ended a request sent with `signal`: its callback runs in a tick queued now. Node's
 * client request writes its bytes on a free keep-alive socket in a tick it queued when it was
 * made (`onSocket`), so this tick comes after that write; on a new connection it comes before the
 * connect, which the request waits for anyway.
 */
export function requestSent(signal: AbortSignal | undefined): void {
  if (!signal) return;
  const fn = waiting.get(signal);
  if (!fn) return;
  waiting.delete(signal);
  process.nextTick(fn);
}
