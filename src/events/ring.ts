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
  /** The last `limit` of `after`'s events, in id order (absent: the ring reads `after`). */
  latest?(sessionId: string, afterId: number, limit: number): StoredEventRow[] | Promise<StoredEventRow[]>;
  /**
   * The session's highest id below `beforeId` (0 when none), at once: a log that has it (SQLite's
   * immediate one) lets a new ring leave `evictedUpTo` unread until something asks for it.
   */
  maxIdBefore?(sessionId: string, beforeId: number): number;
}

/** The highest id the ring has delivered (or that predates it). */
export const seen = (ring: Ring): number =>
  ring.events.length ? ring.events[ring.events.length - 1].id : ring.evictedUpTo;

/**
 * A ring whose `evictedUpTo` is read from the log only when asked for (issue 17: most rings of a
 * server are of sessions it just created and nobody asks): empty, it is the session's highest id
 * then (what an eager load read); holding events, the highest id below its first one, which is
 * what the eager load read unless another process appended in between (then this bound is the
 * truer one: the ring does not hold that event). A ring's eviction sets it as before. A class (the
 * accessor on its prototype, `known` a plain field): one is made per new session, on the publish
 * path (p-bus: an own accessor defined per ring and a WeakSet of unread rings cost more).
 */
class LazyRing implements Ring {
  events: SessionEvent[] = [];
  /** `evictedUpTo` once read or set; undefined: not read yet. */
  known: number | undefined = undefined;
  constructor(
    private readonly sessionId: string,
    private readonly log: Required<Pick<RingLog, 'maxIdBefore'>> & RingLog,
  ) {}
  get evictedUpTo(): number {
    this.known ??= this.events.length
      ? this.log.maxIdBefore(this.sessionId, this.events[0].id)
      : (this.log.maxId(this.sessionId) as number);
    return this.known;
  }
  set evictedUpTo(id: number) {
    this.known = id;
  }
}

/** A lazy ring whose `evictedUpTo` is not read yet: the id before which its events start. */
const unread = (ring: Ring): boolean => ring instanceof LazyRing && ring.known === undefined;

function lazyRing(sessionId: string, log: Required<Pick<RingLog, 'maxIdBefore'>> & RingLog): Ring {
  return new LazyRing(sessionId, log);
}

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
export type RingCache = ReturnType<typeof ringCache>;

export function ringCache(options: {
  ringSize: number;
  maxRings: number;
  log: () => RingLog | undefined;
  listened: (sessionId: string) => boolean;
}): {
  get(sessionId: string): Ring | Promise<Ring>;
  peek(sessionId: string): Ring | undefined;
  /** Nothing known of the session here: no ring in memory, none loading, none dropped. */
  unknown(sessionId: string): boolean;
  /**
   * An unknown session's new ring, empty, its `evictedUpTo` what the caller read itself (an
   * append's previous id: the load's `maxId` read saved); the ring in memory when there is one.
   */
  start(sessionId: string, evictedUpTo: number): Ring;
  /**
   * The session's ring leaves memory now unless the session has listeners (or its ring is the only
   * copy of its events: no log), as `maxRings` would drop it later: read back from the log as it was
   * when it is used again. For a session whose user is done (a compat request's, issue 17 item 4).
   * Whether it left.
   */
  release(sessionId: string): boolean;
  /** A mark of now, for `since`. */
  mark(): number;
  /**
   * Whether the ring came into memory (its log read, or `start`ed) after `mark` was taken: it then
   * starts at what the log held after that moment.
   */
  since(ring: Ring, mark: number): boolean;
} {
  const { ringSize, maxRings, log } = options;
  const rings = new Map<string, Ring>();
  const loading = new Map<string, Promise<Ring>>();
  /** The session whose ring is last in `rings` (most recently used), when known. */
  let newest: string | undefined;
  // Sessions whose ring left memory → the ring's evictedUpTo then (or, for a lazy ring not read,
  // `before`: the id its events started at, nothing read yet).
  const dropped = new Map<string, number | { before: number }>();
  /** The last id a dropped ring had seen (or, not read, the id before its first event). */
  const lastBefore = (from: number | { before: number }) =>
    typeof from === 'number' ? from : from.before - 1;

  /** The ring of a session as it was when it left memory: its events after `from`, from the log. */
  const reloaded = (sessionId: string, rows: StoredEventRow[], from: number | { before: number }): Ring => {
    const kept = rows.slice(Math.max(0, rows.length - ringSize));
    const events = kept.map(eventOf);
    if (rows.length > kept.length) return { events, evictedUpTo: rows[rows.length - kept.length - 1].id };
    const source = log();
    if (typeof from === 'number' || !source?.maxIdBefore || !events.length)
      return { events, evictedUpTo: lastBefore(from) };
    // Still unread: it stays unread, the same question asked of the same first event.
    const ring = lazyRing(sessionId, source as Required<Pick<RingLog, 'maxIdBefore'>> & RingLog);
    ring.events.push(...events);
    return ring;
  };

  /** Takes the session's ring out of memory, remembering where the log is to be read from. */
  const drop = (id: string, ring: Ring) => {
    rings.delete(id);
    if (newest === id) newest = undefined;
    const before = unread(ring) ? ring.events[0]?.id : undefined;
    // An empty ring never read leaves nothing to remember: loaded again, it reads the log then.
    if (unread(ring) && before === undefined) return;
    dropped.set(id, before === undefined ? ring.evictedUpTo : { before });
    // The marks are small, but bounded too: past this a session's ring starts empty, as after a restart.
    if (dropped.size > maxRings * 64) dropped.delete(dropped.keys().next().value as string);
  };

  /** Drops least recently used rings without listeners until `maxRings` are left (never `keep`). */
  const dropIdle = (keep: string) => {
    // Without a log a ring is the only copy of its events.
    if (!log()) return;
    for (const [id, ring] of rings) {
      if (rings.size <= maxRings) break;
      if (id === keep || options.listened(id)) continue;
      drop(id, ring);
    }
  };

  // Rings made so far; each ring's number when its making began (before its log read was sent).
  let made = 0;
  const madeAt = new WeakMap<Ring, number>();
  const keep = (sessionId: string, ring: Ring, at = ++made): Ring => {
    madeAt.set(ring, at);
    rings.delete(sessionId); // last in order, as `newest` says
    rings.set(sessionId, ring);
    newest = sessionId;
    if (rings.size > maxRings) dropIdle(sessionId);
    return ring;
  };

  return {
    peek: (sessionId) => rings.get(sessionId),
    unknown: (sessionId) => !rings.has(sessionId) && !loading.has(sessionId) && !dropped.has(sessionId),
    start: (sessionId, evictedUpTo) => rings.get(sessionId) ?? keep(sessionId, { events: [], evictedUpTo }),
    release(sessionId) {
      const ring = rings.get(sessionId);
      if (!ring || !log() || options.listened(sessionId)) return false;
      drop(sessionId, ring);
      return true;
    },
    mark: () => made,
    since: (ring, mark) => (madeAt.get(ring) ?? 0) > mark,
    get(sessionId) {
      const ring = rings.get(sessionId);
      if (ring) {
        // Already the most recently used (a session's events one after another): order unchanged.
        if (sessionId === newest) return ring;
        rings.delete(sessionId);
        rings.set(sessionId, ring);
        newest = sessionId;
        return ring;
      }
      const inFlight = loading.get(sessionId);
      if (inFlight) return inFlight;
      const from = dropped.get(sessionId);
      dropped.delete(sessionId);
      const source = log();
      if (from === undefined && source?.maxIdBefore)
        return keep(
          sessionId,
          lazyRing(sessionId, source as Required<Pick<RingLog, 'maxIdBefore'>> & RingLog),
        );
      const at = ++made;
      const after = from === undefined ? 0 : lastBefore(from);
      const read =
        from !== undefined
          ? mapMaybe(rowsAfter(source, sessionId, after, ringSize), (rows) => reloaded(sessionId, rows, from))
          : mapMaybe(source?.maxId(sessionId) ?? 0, (id) => ({ events: [], evictedUpTo: id }));
      if (!(read instanceof Promise)) return keep(sessionId, read, at);
      const load = read.then(
        (loaded) => {
          loading.delete(sessionId);
          return keep(sessionId, loaded, at);
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

/**
 * What a ring read back reads of its session's log after `afterId`: its last `ringSize` events,
 * and one more to tell where the ring starts (the id it evicted up to), not everything logged
 * since it left memory (another node's run of thousands of events, or a session's whole log).
 */
function rowsAfter(source: RingLog | undefined, sessionId: string, afterId: number, ringSize: number) {
  return source?.latest?.(sessionId, afterId, ringSize + 1) ?? source?.after(sessionId, afterId) ?? [];
}

/** `fn` of a value, at once when it is not a promise. */
function mapMaybe<T, R>(value: T | Promise<T>, fn: (value: T) => R): R | Promise<R> {
  return value instanceof Promise ? value.then(fn) : fn(value);
}
