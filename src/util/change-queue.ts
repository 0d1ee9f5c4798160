/**
 * A queue of async changes: one at a time in call order, for a service whose callers include sync
 * listeners that cannot await (issue 18: repositories went async).
 * @module
 */

/**
 * Changes one at a time in call order; reads after the changes called before them. A failed
 * change rejects its own caller only.
 */
export function createChangeQueue() {
  let queue: Promise<unknown> = Promise.resolve();
  return {
    serial<T>(change: () => Promise<T>): Promise<T> {
      const result = queue.then(change);
      queue = result.catch(() => undefined);
      return result;
    },
    settled: <T>(read: () => Promise<T>): Promise<T> => queue.then(read),
    flush: (): Promise<void> => queue.then(() => undefined),
  };
}
