/**
 * How many promises a piece of code makes (an async hook counting `PROMISE` inits while it runs):
 * the firm figure of the model stream's promise tests (test/providers/metered-parts.test.ts,
 * lean-body-chunks.test.ts).
 */
import { createHook } from 'node:async_hooks';

/** The promises made while `read` runs (its own included). */
export async function countPromises(read: () => Promise<unknown>): Promise<number> {
  let promises = 0;
  const hook = createHook({
    init(_id, type) {
      if (type === 'PROMISE') promises++;
    },
  }).enable();
  try {
    await read();
  } finally {
    hook.disable();
  }
  return promises;
}

/** The least promises `read` makes in `times` runs (other work in the process only adds). */
export async function leastPromises(read: () => Promise<unknown>, times = 5): Promise<number> {
  let least = Number.POSITIVE_INFINITY;
  for (let i = 0; i < times; i++) least = Math.min(least, await countPromises(read));
  return least;
}
