/**
 * The session event bus. Every published session event gets a monotonically increasing id (the
 * session_events rowid), is kept in a bounded per-session ring for replay, and is appended to the
 * database so a reconnect older than the ring can resync from the log. Only the most recently used
 * rings stay in memory (`maxRings`, sessions with listeners always): a long-lived server creates a
 * session per compat request, and a ring per session would grow with every one (issue 17). A ring
 * dropped from memory is read back from the log when its session is used again, as it was.
 * Events flow one way: domain → bus → subscribers (SSE, TUI, svc run, tests).
 * @module
 */
import type { Db } from '../store/db';
import type { Clock } from '../util/ids';
import { createEventStore, type EventStore } from './event-store';

export interface SessionEvent<P extends Record<string, unknown> = Record<string, unknown>> {
  id: number;
  session_id: string;
  type: string;
  payload: P;
  created_at: number;
}

export type EventListener = (event: SessionEvent) => void;

export interface ReplayResult {
  events: SessionEvent[];
  /** ring: served from memory; log: the id was older than the ring, served from the database. */
  source: 'ring' | 'log';
}

export interface EventBus {
  publish<P extends Record<string, unknown>>(sessionId: string, type: string, payload: P): SessionEvent<P>;
  /** Listen to one session, or to every session with '*'. Returns the unsubscribe function. */
  subscribe(sessionId: string, listener: EventListener): () => void;
  /** Events after `afterId` (exclusive). */
  replay(sessionId: string, afterId: number): ReplayResult;
  /** The retained ring entries that back replay (oldest first). */
  retained(sessionId: string): SessionEvent[];
  /** Highest event id published for the session (0 when none). */
  lastId(sessionId: string): number;
  close(): void;
}

interface Ring {
  events: SessionEvent[];
  /** Highest id that is not in the ring any more (or predates this process). */
  evictedUpTo: number;
}

export function createEventBus(deps: {
  /** Opened on first publish/replay; without it events live in memory only. */
  db?: () => Db;
  clock: Clock;
  ringSize?: number;
  /** Rings kept in memory at most, least recently used dropped first (default 128). */
  maxRings?: number;
  onError?: (e: unknown) => void;
}): EventBus {
  const ringSize = deps.ringSize ?? 1000;
  const listeners = new Map<string, Set<EventListener>>();
  let memoryId = 0;
  let closed = false;
  // Events published by a listener while another event is being delivered wait here, so every
  // listener sees events in id order (a listener that reacts to `run.started` by publishing must
  // not make later listeners see its event before `run.started`). Still delivered before the
  // outermost publish returns.
  let delivering = false;
  const backlog: SessionEvent[] = [];

  let store: EventStore | undefined;
  const sql = () => {
    if (!deps.db || closed) return undefined;
    store ??= createEventStore(deps.db());
    return store;
  };

  const ringFor = ringCache({
    ringSize,
    maxRings: deps.maxRings ?? 128,
    log: sql,
    listened: (sessionId) => (listeners.get(sessionId)?.size ?? 0) > 0,
  });

  const deliver = (event: SessionEvent) => {
    for (const key of [event.session_id, '*']) {
      for (const listener of listeners.get(key) ?? []) {
        try {
          listener(event);
        } catch (error) {
          // One broken subscriber must not stop the others or the publisher.
          deps.onError?.(error);
        }
      }
    }
  };

  return {
    publish(sessionId, type, payload) {
      const created_at = deps.clock.now();
      const ring = ringFor(sessionId);
      const statements = sql();
      const id = statements
        ? statements.insert(sessionId, type, JSON.stringify(payload), created_at)
        : ++memoryId;
      const event = { id, session_id: sessionId, type, payload, created_at };
      ring.events.push(event);
      if (ring.events.length > ringSize) {
        const evicted = ring.events.splice(0, ring.events.length - ringSize);
        ring.evictedUpTo = evicted[evicted.length - 1].id;
      }
      if (delivering) {
        backlog.push(event);
        return event;
      }
      delivering = true;
      try {
        deliver(event);
        for (let next = backlog.shift(); next; next = backlog.shift()) deliver(next);
      } finally {
        delivering = false;
        backlog.length = 0;
      }
      return event;
    },
    subscribe(sessionId, listener) {
      let set = listeners.get(sessionId);
      if (!set) {
        set = new Set();
        listeners.set(sessionId, set);
      }
      set.add(listener);
      return () => {
        set.delete(listener);
        if (set.size === 0 && listeners.get(sessionId) === set) listeners.delete(sessionId);
      };
    },
    replay(sessionId, afterId) {
      const ring = ringFor(sessionId);
      const statements = sql();
      if (afterId >= ring.evictedUpTo || !statements) {
        return { events: ring.events.filter((e) => e.id > afterId), source: 'ring' };
      }
      const rows = statements.after(sessionId, afterId);
      return {
        events: rows.map((r) => ({ ...r, payload: JSON.parse(r.payload) as Record<string, unknown> })),
        source: 'log',
      };
    },
    retained(sessionId) {
      return [...ringFor(sessionId).events];
    },
    lastId(sessionId) {
      const ring = ringFor(sessionId);
      return ring.events.length ? ring.events[ring.events.length - 1].id : ring.evictedUpTo;
    },
    close() {
      closed = true;
      listeners.clear();
    },
  };
}

/**
 * The rings kept in memory, most recently used last: at most `maxRings`; a ring of a session
 * without listeners leaves first, and is read back from the log as it was when it is used again.
 */
function ringCache(options: {
  ringSize: number;
  maxRings: number;
  log: () => EventStore | undefined;
  listened: (sessionId: string) => boolean;
}): (sessionId: string) => Ring {
  const { ringSize, maxRings, log } = options;
  const rings = new Map<string, Ring>();
  // Sessions whose ring left memory → the ring's evictedUpTo then.
  const dropped = new Map<string, number>();

  /** The ring of a session as it was when it left memory: its events after `from`, from the log. */
  const reload = (sessionId: string, from: number): Ring => {
    const rows = log()?.after(sessionId, from) ?? [];
    const kept = rows.slice(Math.max(0, rows.length - ringSize));
    return {
      events: kept.map((r) => ({ ...r, payload: JSON.parse(r.payload) as Record<string, unknown> })),
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

  return (sessionId) => {
    let ring = rings.get(sessionId);
    if (ring) {
      rings.delete(sessionId);
      rings.set(sessionId, ring);
      return ring;
    }
    const from = dropped.get(sessionId);
    if (from !== undefined) {
      dropped.delete(sessionId);
      ring = reload(sessionId, from);
    } else {
      ring = { events: [], evictedUpTo: log()?.maxId(sessionId) ?? 0 };
    }
    rings.set(sessionId, ring);
    if (rings.size > maxRings) dropIdle(sessionId);
    return ring;
  };
}
