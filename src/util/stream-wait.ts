/**
 * Two small helpers of the event-stream clients, the terminal UI's (src/surfaces/tui/sse.ts) and
 * the browser's (src/surfaces/web/src/events.ts): nothing here needs Node, so the browser bundle
 * takes this file as it is.
 * @module
 */

/** Waits `ms`, or less when `signal` aborts; resolves either way (the caller checks the signal). */
export function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    }
    signal.addEventListener('abort', done, { once: true });
  });
}

/** `text` parsed as JSON, or `undefined` when it is not JSON. */
export function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
