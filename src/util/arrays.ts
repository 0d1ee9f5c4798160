/**
 * Small array helpers.
 * @module
 */

/** Whether two arrays hold the same items (`===`) in the same order. */
export function sameItems<T>(a: readonly T[], b: readonly T[]): boolean {
  return a.length === b.length && a.every((item, i) => item === b[i]);
}
