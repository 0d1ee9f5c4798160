/**
 * What pg and pg-pool do around a piece of work (issue 18 item 6, p-pgconn): pg-pool checkouts
 * (`pool.query` takes one too), `setTimeout`s set and `error` listeners added to pg clients. Counts,
 * for tests that must fail when a lone statement or transaction goes through pg-pool again.
 * @module
 */
import { EventEmitter } from 'node:events';
import pgDriver from 'pg';

/** Where pg-pool's `connect` is defined (pg's `Pool` is a subclass binding its `Client`). */
function poolPrototype(): { connect: (...args: unknown[]) => unknown } {
  let proto = pgDriver.Pool.prototype as object;
  while (!Object.hasOwn(proto, 'connect')) proto = Object.getPrototypeOf(proto);
  return proto as { connect: (...args: unknown[]) => unknown };
}

export type PoolCounts = { checkouts: number; timers: number; errorListeners: number };

/** pg-pool checkouts (`pool.query` takes one too), `setTimeout`s and `error` listeners added to pg clients while `fn` runs. */
export async function poolCountsOf(fn: () => Promise<unknown>): Promise<PoolCounts> {
  const counts: PoolCounts = { checkouts: 0, timers: 0, errorListeners: 0 };
  const pool = poolPrototype();
  const connect = pool.connect;
  const setTimer = globalThis.setTimeout;
  const emitter = EventEmitter.prototype as unknown as Record<'on' | 'once', (...args: unknown[]) => unknown>;
  const on = emitter.on;
  const once = emitter.once;
  pool.connect = function (this: unknown, ...args: unknown[]) {
    counts.checkouts++;
    return connect.apply(this, args);
  };
  globalThis.setTimeout = ((...args: Parameters<typeof setTimeout>) => {
    counts.timers++;
    return setTimer(...args);
  }) as typeof setTimeout;
  const listening = (original: (...args: unknown[]) => unknown) =>
    function (this: unknown, event: unknown, ...rest: unknown[]) {
      if (event === 'error' && this instanceof pgDriver.Client) counts.errorListeners++;
      return original.call(this, event, ...rest);
    };
  emitter.on = listening(on);
  emitter.once = listening(once);
  try {
    await fn();
  } finally {
    pool.connect = connect;
    globalThis.setTimeout = setTimer;
    emitter.on = on;
    emitter.once = once;
  }
  return counts;
}

/** The fewest of each count over `times` tries. */
export async function fewestPoolCounts(fn: () => Promise<unknown>, times = 3): Promise<PoolCounts> {
  let best: PoolCounts | undefined;
  for (let i = 0; i < times; i++) {
    const counts = await poolCountsOf(fn);
    best = best
      ? {
          checkouts: Math.min(best.checkouts, counts.checkouts),
          timers: Math.min(best.timers, counts.timers),
          errorListeners: Math.min(best.errorListeners, counts.errorListeners),
        }
      : counts;
  }
  return best as PoolCounts;
}
