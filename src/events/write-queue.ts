/**
 * The bus's ordered write queue (./bus.ts).
 * @module
 */
import { AsyncResource } from 'node:async_hooks';

/**
 * The bus's ordered write queue: `write` runs for one item at a time, in enqueue order; it
 * answers at once (no promise) when it can, and then the queue drains before `enqueue` returns.
 */
export function writeQueue<T extends { failed?: (error: unknown) => void }>(
  write: (item: T) => void | Promise<void>,
  onError: ((e: unknown) => void) | undefined,
  /**
   * Items written together: `joins(first, next)` says whether `next`, queued right behind, is
   * written with `first` (and the items between); such a run of items (up to 64) goes to `writeAll`
   * in queue order instead of `write` one by one. A failure fails every item of the run.
   */
  batch?: {
    joins(first: T, next: T): boolean;
    writeAll(items: T[]): Promise<void>;
    /**
     * True: an idle queue starts writing after the current synchronous code (a microtask), so
     * the items it enqueues one after another (an event and the next) are one run, where the
     * first would have gone alone. For a log that answers asynchronously anyway.
     */
    deferStart?(): boolean;
    /**
     * True: `next`, queued among items that join, may be written after them (it is moved behind
     * the run) instead of ending it: a step whose effect does not depend on coming before them.
     */
    passes?(next: T): boolean;
  },
): {
  enqueue(item: T): void;
  flush(): Promise<void>;
  /** Nothing queued, being written or about to start: an item enqueued now is written next. */
  idle(): boolean;
  /**
   * Two writes at most ahead of an item enqueued now: the one in flight and, behind it, items that
   * are written together as one run (`batch.joins`), or the run a deferred start is about to write.
   */
  twoAhead(): boolean;
} {
  const queue: T[] = [];
  let pumping = false;
  // Items enqueued and written so far; `flush` waits for the count at its call, not for an empty queue.
  let enqueued = 0;
  let written = 0;
  const waiters: { upTo: number; resolve: () => void }[] = [];

  const settle = () => {
    written++;
    for (let i = waiters.length - 1; i >= 0; i--) {
      if (waiters[i].upTo <= written) waiters.splice(i, 1)[0].resolve();
    }
  };

  /**
   * Drains the queue in order, synchronously as long as every write answers at once (SQLite: no
   * promise made per event, p-bus); a write that returns a promise hands the rest of the drain to
   * `resume`, which continues once it settles. Bound to the context the bus was made in: a publish
   * inside a PostgreSQL store transaction (a step's writes, src/store/transactions.ts) must not
   * start a drain that joins that ambient transaction, whose commit would not wait for it (the
   * append would run after COMMIT and fail); `resume`'s awaits run in that context too.
   */
  const drain = AsyncResource.bind((): void => {
    if (pumping) return;
    pumping = true;
    let handedOff = false;
    try {
      for (let item = queue.shift(); item; item = queue.shift()) {
        // A run of one (an event alone in the queue: SQLite's every publish) allocates nothing.
        let run: T[] | undefined;
        let passed: T[] | undefined;
        while (batch && queue.length && (run?.length ?? 1) < 64) {
          if (batch.joins(item, queue[0])) {
            run ??= [item];
            run.push(queue.shift() as T);
          } else if (batch.passes?.(queue[0])) {
            passed ??= [];
            passed.push(queue.shift() as T);
          } else break;
        }
        if (passed) queue.unshift(...passed);
        let storing: void | Promise<void>;
        try {
          storing = run && batch ? batch.writeAll(run) : write(item);
        } catch (error) {
          failed(run ?? [item], error);
          continue;
        }
        if (storing) {
          handedOff = true;
          void resume(storing, run ?? [item]);
          return;
        }
        if (run) for (const _ of run) settle();
        else settle();
      }
    } finally {
      if (!handedOff) pumping = false;
    }
  });

  /** Every item of a run failed: reported once, each told, each settled. */
  const failed = (run: T[], error: unknown) => {
    onError?.(error);
    for (const one of run) one.failed?.(error);
    for (const _ of run) settle();
  };

  /** The drain after a write that answered with a promise: once it settles, the next items. */
  const resume = async (storing: Promise<void>, run: T[]): Promise<void> => {
    try {
      await storing;
      for (const _ of run) settle();
    } catch (error) {
      failed(run, error);
    } finally {
      pumping = false;
      drain();
    }
  };

  let starting = false;
  const enqueue = (item: T) => {
    enqueued++;
    queue.push(item);
    if (pumping || !batch?.deferStart?.()) {
      drain();
      return;
    }
    if (starting) return;
    starting = true;
    queueMicrotask(() => {
      starting = false;
      drain();
    });
  };

  const flush = (): Promise<void> => {
    if (written >= enqueued) return Promise.resolve();
    return new Promise<void>((resolve) => waiters.push({ upTo: enqueued, resolve }));
  };

  const idle = () => !pumping && !starting && written >= enqueued;
  const twoAhead = () => {
    if (!pumping) return starting;
    if (queue.length === 0) return true;
    if (!batch || queue.length >= 64) return false;
    for (let i = 1; i < queue.length; i++) if (!batch.joins(queue[0], queue[i])) return false;
    return !batch.passes?.(queue[0]) && (queue.length > 1 || batch.joins(queue[0], queue[0]));
  };

  return { enqueue, flush, idle, twoAhead };
}
