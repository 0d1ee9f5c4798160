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
  let unsettled = 0;
  const settle = () => {
    unsettled--;
  };
  return {
    serial<T>(change: () => Promise<T>): Promise<T> {
      unsettled++;
      const result = queue.then(change);
      queue = result.then(settle, settle);
      return result;
    },
    /** No change called is still queued or running. */
    idle: (): boolean => unsettled === 0,
    settled: <T>(read: () => Promise<T>): Promise<T> => queue.then(read),
    flush: (): Promise<void> => queue.then(() => undefined),
  };
}
