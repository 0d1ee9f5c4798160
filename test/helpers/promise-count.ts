/**
 * Counting the promises a piece of code makes, with an async hook (no timing): the pins of the
 * paths whose promises were cut (test/store/pg-statement-promises.test.ts,
 * test/http/compat-stream-events.test.ts).
 */
import { createHook } from 'node:async_hooks';

/** A counter of promises made between `start()` and `stop()` (which answers the count). */
export function promiseCounter(): { start(): void; stop(): number } {
  let made = 0;
  const hook = createHook({
    init(_id, type) {
      if (type === 'PROMISE') made++;
    },
  });
  return {
    start() {
      made = 0;
      hook.enable();
    },
    stop() {
      hook.disable();
      return made;
    },
  };
}
