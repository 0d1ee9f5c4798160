/**
 * The bus's per-session rings (./bus.ts): the events of a session the bus has delivered, the most
 * recent `ringSize` of them kept for replay, and the cache of rings in memory.
 * @module
 */
import type { StoredEventRow } from './event-store';

export interface SessionEvent<P extends Record<string, unknown> = Record<string, unknown>> {
  id: number;
  session_id: string;
  type: string;
  payload: P;
  created_at: number;
}

export interface Ring {
  events: SessionEvent[];
  /** Highest id that is not in the ring any more (or predates this process). */
  evictedUpTo: number;
}

/** The log as the bus reads it: at once where the store can, else a promise. */
export interface RingLog {
  maxId(sessionId: string): number | Promise<number>;
  after(sessionId: string, afterId: number): StoredEventRow[] | Promise<StoredEventRow[]>;
}

/** The highest id the ring has delivered (or that predates it). */
export const seen = (ring: Ring): number =>
  ring.events.length ? ring.events[ring.events.length - 1].id : ring.evictedUpTo;

/** Adds an event after the ring's last one, dropping the oldest past `ringSize`. */
export function pushToRing(ring: Ring, event: SessionEvent, ringSize: number): void {
  ring.events.push(event);
  if (ring.events.length > ringSize) {
    const evicted = ring.events.splice(0, ring.events.length - ringSize);
    ring.evictedUpTo = evicted[evicted.length - 1].id;
  }
}

export const eventOf = (row: StoredEventRow): SessionEvent => ({
  ...row,
  payload: JSON.parse(row.payload) as Record<string, unknown>,
});

/**
 * The rings kept in memory, most recently used last: at most `maxRings`; a ring of a session
 * without listeners leaves first, and is read back from the log as it was when it is used again.
 * `get` answers at once for a ring in memory (or from a log that answers at once), else a promise;
 * one load per session at a time.
 */
export function ringCache(options: {
  ringSize: number;
  maxRings: number;
  log: () => RingLog | undefined;
  listened: (sessionId: string) => boolean;
}): { get(sessionId: string): Ring | Promise<Ring>; peek(sessionId: string): Ring | undefined } {
  const { ringSize, maxRings, log } = options;
  const rings = new Map<string, Ring>();
  const loading = new Map<string, Promise<Ring>>();
  // Sessions whose ring left memory → the ring's evictedUpTo then.
  const dropped = new Map<string, number>();

  /** The ring of a session as it was when it left memory: its events after `from`, from the log. */
  const reloaded = (rows: StoredEventRow[], from: number): Ring => {
    const kept = rows.slice(Math.max(0, rows.length - ringSize));
    return {
      events: kept.map(eventOf),
      evictedUpTo: rows.length > kept.length ? rows[rows.length - kept.length - 1].id : from,
    };
  };

  /** Drops least recently used rings without listeners until `maxRings` are left (never `keep`). */
  const dropIdle = (keep: string) => {
    // Without a log a ring is the only copy of its events.
    if (!log()) return;
    for (const [id, ring] of rings) {
      if (rings.size <= maxRings) break;
      if (id === keep || options.listened(id)) continue;
      rings.delete(id);
      dropped.set(id, ring.evictedUpTo);
      // The marks are small, but bounded too: past this a session's ring starts empty, as after a restart.
      if (dropped.size > maxRings * 64) dropped.delete(dropped.keys().next().value as string);
    }
  };

  const keep = (sessionId: string, ring: Ring): Ring => {
    rings.set(sessionId, ring);
    if (rings.size > maxRings) dropIdle(sessionId);
    return ring;
  };

  return {
    peek: (sessionId) => rings.get(sessionId),
    get(sessionId) {
      const ring = rings.get(sessionId);
      if (ring) {
        rings.delete(sessionId);
        rings.set(sessionId, ring);
        return ring;
      }
      const inFlight = loading.get(sessionId);
      if (inFlight) return inFlight;
      const from = dropped.get(sessionId);
      dropped.delete(sessionId);
      const source = log();
      const read =
        from !== undefined
          ? mapMaybe(source?.after(sessionId, from) ?? [], (rows) => reloaded(rows, from))
          : mapMaybe(source?.maxId(sessionId) ?? 0, (id) => ({ events: [], evictedUpTo: id }));
      if (!(read instanceof Promise)) return keep(sessionId, read);
      const load = read.then(
        (loaded) => {
          loading.delete(sessionId);
          return keep(sessionId, loaded);
        },
        (error: unknown) => {
          loading.delete(sessionId);
          if (from !== undefined) dropped.set(sessionId, from);
          throw error;
        },
      );
      loading.set(sessionId, load);
      return load;
    },
  };
}

/** `fn` of a value, at once when it is not a promise. */
function mapMaybe<T, R>(value: T | Promise<T>, fn: (value: T) => R): R | Promise<R> {
  return value instanceof Promise ? value.then(fn) : fn(value);
}
