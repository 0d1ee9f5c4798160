/**
 * The session event bus. Every published session event gets a monotonically increasing id (the
 * id the event log gives it), is kept in a bounded per-session ring for replay, and is appended to
 * the log so a reconnect older than the ring can resync from it. Only the most recently used
 * rings stay in memory (`maxRings`, sessions with listeners always): a long-lived server creates a
 * session per compat request, and a ring per session would grow with every one (issue 17). A ring
 * dropped from memory is read back from the log when its session is used again, as it was.
 * Events flow one way: domain → bus → subscribers (SSE, TUI, svc run, tests).
 *
 * The log is async (issue 18: SQLite or PostgreSQL), publishing is not: `publish` queues the
 * event and returns. One ordered write queue per bus appends the events in publish order, each
 * append awaited before the next, so ids increase in publish order per session; an event reaches
 * the ring and the subscribers only once it is stored, with its id. So a subscriber never sees an
 * event a replay could not serve, and `replay`, `retained` and `lastId` wait for the queue first
 * (they see every event published before the call). A subscriber that subscribes, then replays
 * after an id, then drops the ids it has seen misses nothing and gets nothing twice. A store that
 * answers at once (SQLite: `now` of ./event-store.ts) drains the queue before `publish` returns, so
 * on SQLite an event is stored and delivered synchronously, as it always was. Where a caller
 * needs the id, `publishStored` resolves the stored event; `flush` waits for the queue.
 * Events published by a listener during a delivery join the queue behind it, so every listener
 * sees events in id order.
 * @module
 */
import { AsyncResource } from 'node:async_hooks';
import type { Db } from '../store/db';
import type { Clock } from '../util/ids';
import {
  createEventStore,
  type EventStore,
  type ImmediateEventStore,
  type StoredEventRow,
} from './event-store';

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
  /**
   * Queues the event: it is stored in publish order, then delivered with its id. Never throws
   * for the log (a failed append goes to `onError`, and its event is not delivered).
   */
  publish<P extends Record<string, unknown>>(sessionId: string, type: string, payload: P): void;
  /** `publish`, resolving the event once it is stored and delivered (rejects when the append fails). */
  publishStored<P extends Record<string, unknown>>(
    sessionId: string,
    type: string,
    payload: P,
  ): Promise<SessionEvent<P>>;
  /** Resolves once every event published before the call is stored and delivered. */
  flush(): Promise<void>;
  /** Listen to one session, or to every session with '*'. Returns the unsubscribe function. */
  subscribe(sessionId: string, listener: EventListener): () => void;
  /** Events after `afterId` (exclusive). */
  replay(sessionId: string, afterId: number): Promise<ReplayResult>;
  /** The retained ring entries that back replay (oldest first). */
  retained(sessionId: string): Promise<SessionEvent[]>;
  /** Highest event id published for the session (0 when none). */
  lastId(sessionId: string): Promise<number>;
  close(): void;
}

interface Ring {
  events: SessionEvent[];
  /** Highest id that is not in the ring any more (or predates this process). */
  evictedUpTo: number;
}

/** The log as the bus reads it: at once where the store can, else a promise. */
interface RingLog {
  maxId(sessionId: string): number | Promise<number>;
  after(sessionId: string, afterId: number): StoredEventRow[] | Promise<StoredEventRow[]>;
}

interface Queued {
  sessionId: string;
  type: string;
  payload: Record<string, unknown>;
  created_at: number;
  stored?: (event: SessionEvent) => void;
  failed?: (error: unknown) => void;
}

export function createEventBus(deps: {
  /** The event log, opened on first publish/replay; without it (and `db`) events live in memory only. */
  store?: () => EventStore & { readonly now?: ImmediateEventStore };
  /** The SQLite database, for the SQLite log (./event-store.ts) when `store` is not given. */
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

  const open = deps.store ?? (deps.db ? () => createEventStore(deps.db!()) : undefined);
  let store: (EventStore & { readonly now?: ImmediateEventStore }) | undefined;
  const log = () => {
    if (!open || closed) return undefined;
    store ??= open();
    return store;
  };
  const immediate = (): ImmediateEventStore | undefined => log()?.now;
  const ringLog = (): RingLog | undefined => immediate() ?? log();

  const rings = ringCache({
    ringSize,
    maxRings: deps.maxRings ?? 128,
    log: ringLog,
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

  /** Stores one queued event (at once when the store can: no promise then), then rings and delivers it. */
  const store1 = (item: Queued): void | Promise<void> => {
    const ring = rings.get(item.sessionId);
    return ring instanceof Promise ? ring.then((loaded) => append(item, loaded)) : append(item, ring);
  };

  const append = (item: Queued, ring: Ring): void | Promise<void> => {
    const text = JSON.stringify(item.payload);
    const now = immediate();
    if (now) return stored(item, ring, now.insert(item.sessionId, item.type, text, item.created_at));
    const current = log();
    if (!current) return stored(item, ring, ++memoryId);
    return current
      .insert(item.sessionId, item.type, text, item.created_at)
      .then((id) => stored(item, ring, id));
  };

  const stored = (item: Queued, ring: Ring, id: number) => {
    const event = {
      id,
      session_id: item.sessionId,
      type: item.type,
      payload: item.payload,
      created_at: item.created_at,
    };
    ring.events.push(event);
    if (ring.events.length > ringSize) {
      const evicted = ring.events.splice(0, ring.events.length - ringSize);
      ring.evictedUpTo = evicted[evicted.length - 1].id;
    }
    deliver(event);
    item.stored?.(event);
  };

  const { enqueue, flush } = writeQueue((item) => store1(item), deps.onError);

  const ringFor = async (sessionId: string): Promise<Ring> => {
    await flush();
    return await rings.get(sessionId);
  };

  return {
    publish(sessionId, type, payload) {
      enqueue({ sessionId, type, payload, created_at: deps.clock.now() });
    },
    publishStored<P extends Record<string, unknown>>(sessionId: string, type: string, payload: P) {
      return new Promise<SessionEvent<P>>((resolve, reject) => {
        enqueue({
          sessionId,
          type,
          payload,
          created_at: deps.clock.now(),
          stored: (event) => resolve(event as SessionEvent<P>),
          failed: reject,
        });
      });
    },
    flush,
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
    async replay(sessionId, afterId) {
      const ring = await ringFor(sessionId);
      const current = log();
      if (afterId >= ring.evictedUpTo || !current) {
        return { events: ring.events.filter((e) => e.id > afterId), source: 'ring' };
      }
      const rows = await current.after(sessionId, afterId);
      return { events: rows.map(eventOf), source: 'log' };
    },
    async retained(sessionId) {
      return [...(await ringFor(sessionId)).events];
    },
    async lastId(sessionId) {
      const ring = await ringFor(sessionId);
      return ring.events.length ? ring.events[ring.events.length - 1].id : ring.evictedUpTo;
    },
    close() {
      closed = true;
      listeners.clear();
    },
  };
}

/**
 * The bus's ordered write queue: `write` runs for one item at a time, in enqueue order; it
 * answers at once (no promise) when it can, and then the queue drains before `enqueue` returns.
 */
function writeQueue(
  write: (item: Queued) => void | Promise<void>,
  onError: ((e: unknown) => void) | undefined,
): { enqueue(item: Queued): void; flush(): Promise<void> } {
  const queue: Queued[] = [];
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
   * Drains the queue in order; runs synchronously as long as nothing has to be awaited. Bound to
   * the context the bus was made in: a publish inside a PostgreSQL store transaction (a step's
   * writes, src/store/transactions.ts) must not start a drain that joins that ambient transaction,
   * whose commit would not wait for it (the append would run after COMMIT and fail).
   */
  const pump = AsyncResource.bind(async (): Promise<void> => {
    if (pumping) return;
    pumping = true;
    try {
      for (let item = queue.shift(); item; item = queue.shift()) {
        try {
          const storing = write(item);
          if (storing) await storing;
        } catch (error) {
          onError?.(error);
          item.failed?.(error);
        } finally {
          settle();
        }
      }
    } finally {
      pumping = false;
    }
  });

  const enqueue = (item: Queued) => {
    enqueued++;
    queue.push(item);
    void pump();
  };

  const flush = (): Promise<void> => {
    if (written >= enqueued) return Promise.resolve();
    return new Promise<void>((resolve) => waiters.push({ upTo: enqueued, resolve }));
  };

  return { enqueue, flush };
}

const eventOf = (row: StoredEventRow): SessionEvent => ({
  ...row,
  payload: JSON.parse(row.payload) as Record<string, unknown>,
});

/**
 * The rings kept in memory, most recently used last: at most `maxRings`; a ring of a session
 * without listeners leaves first, and is read back from the log as it was when it is used again.
 * `get` answers at once for a ring in memory (or from a log that answers at once), else a promise;
 * one load per session at a time.
 */
function ringCache(options: {
  ringSize: number;
  maxRings: number;
  log: () => RingLog | undefined;
  listened: (sessionId: string) => boolean;
}): { get(sessionId: string): Ring | Promise<Ring> } {
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
