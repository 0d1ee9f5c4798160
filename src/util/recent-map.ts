/**
 * A string-keyed map bounded to the last `bound` keys set: a ring of the keys set, where the slot a
 * new key takes names the key it drops. It replaces caches that were cleared whole once past a
 * bound (issue 17 item 3, p-deopt): a clear forgot the entries still in use (the runs in flight,
 * each looked up again), and its branch, taken once a thousand sets, deopted the hot functions it
 * was inlined into the first time it ran (V8: "Insufficient type feedback"). `set` has no branch:
 * the first `bound` sets drop the empty key, which is never set.
 *
 * A key set again keeps its older slot too: when that slot comes round the key is dropped early,
 * and the next `get` misses (the caller looks it up again, as for any key not kept).
 * @module
 */
export interface RecentMap<V> {
  get(key: string): V | undefined;
  /** Sets `key`, dropping the key set `bound` sets ago (if still held). */
  set(key: string, value: V): void;
  delete(key: string): void;
  readonly size: number;
}

export function recentMap<V>(bound: number): RecentMap<V> {
  const map = new Map<string, V>();
  // Packed strings ('' in every slot not yet used): `ring[next]` is always a string.
  const ring: string[] = Array.from({ length: bound }, () => '');
  let next = 0;
  return {
    get: (key) => map.get(key),
    set(key, value) {
      map.delete(ring[next]);
      ring[next] = key;
      next = (next + 1) % bound;
      map.set(key, value);
    },
    delete(key) {
      map.delete(key);
    },
    get size() {
      return map.size;
    },
  };
}
