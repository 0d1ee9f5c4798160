/**
 * The bus's log (`session_events`): appending a published event, the highest id of a session, the
 * events after an id for a replay older than the ring, and the last of them for a ring read back. Async (issue 18): the PostgreSQL twin
 * is ./pg-event-store.ts. Other reads: ./log-queries.ts.
 * @module
 */
import type { Db } from '../store/db';
import { heldRows } from '../store/held-rows';

/** A stored event; the payload is JSON text. */
export interface StoredEventRow {
  id: number;
  session_id: string;
  type: string;
  payload: string;
  created_at: number;
}

/** An appended event's id and the session's highest id before it (0 when none). */
export interface AppendedEvent {
  id: number;
  previous: number;
}

/** One event of an `appendAcross` call. */
export interface QueuedAppend {
  sessionId: string;
  type: string;
  payload: string;
  createdAt: number;
}

export interface EventStore {
  /** Appends an event; resolves its id. */
  insert(sessionId: string, type: string, payload: string, createdAt: number): Promise<number>;
  /**
   * `insert`, also resolving the session's highest id before the event, read in the same statement:
   * where other nodes append to the log too, the bus learns whether events came between (a log
   * shared by nodes, ./pg-event-store.ts). Optional: without it the bus reads the log after each append.
   */
  append?(sessionId: string, type: string, payload: string, createdAt: number): Promise<AppendedEvent>;
  /**
   * `append` of several events of any sessions, in order, in one call: their ids ascending in that
   * order, each with its session's highest id before the call's first event of that session
   * (./pg-event-store.ts). Optional.
   */
  appendAcross?(events: readonly QueuedAppend[]): Promise<AppendedEvent[]>;
  /**
   * `appendAcross` as a function call another statement makes (`EventBus.joinAll`), its
   * parameters numbered from `first`: it answers rows (`event_id`, `previous_id`) in the events'
   * order. Optional (./pg-event-store.ts).
   */
  appendCall?(first: number, events: readonly QueuedAppend[]): { text: string; values: unknown[] };
  /**
   * `appendCall` for one session the caller's statement inserts itself (a new session's start,
   * p-pglone): no other appender can know the session before that statement commits, so no lock
   * and no function call. `ctes` (top-level `WITH`s of the statement, written where `go` holds)
   * insert the events in order and notify; `rows` is a `FROM` item answering (`event_id`,
   * `previous_id`) as the call does. Optional (./pg-event-store.ts).
   */
  appendNewCall?(
    first: number,
    events: readonly QueuedAppend[],
    go: string,
  ): { ctes: string; rows: string; values: unknown[] };
  /** Highest id logged for the session (0 when none). */
  maxId(sessionId: string): Promise<number>;
  /**
   * The session's events after `afterId` (exclusive), in id order; with `limit`, the first `limit`
   * of them (a long replay reads the log a page at a time).
   */
  after(sessionId: string, afterId: number, limit?: number): Promise<StoredEventRow[]>;
  /**
   * The session's last `limit` events after `afterId` (exclusive), in id order: a ring read back
   * into memory reads no more than it keeps (./ring.ts). Optional: without it the bus reads `after`.
   */
  latest?(sessionId: string, afterId: number, limit: number): Promise<StoredEventRow[]>;
  /**
   * How many events the session logged after `afterId` up to `upTo` (both ids; exclusive, then
   * inclusive): a replay's size, counted without reading its rows. Optional: without it the bus
   * counts the rows `after` reads.
   */
  count?(sessionId: string, afterId: number, upTo: number): Promise<number>;
}

/** The same operations answered at once: a store on an embedded database (SQLite). */
export interface ImmediateEventStore {
  insert(sessionId: string, type: string, payload: string, createdAt: number): number;
  maxId(sessionId: string): number;
  /** Highest id logged for the session below `beforeId` (0 when none). */
  maxIdBefore(sessionId: string, beforeId: number): number;
  after(sessionId: string, afterId: number, limit?: number): StoredEventRow[];
  latest(sessionId: string, afterId: number, limit: number): StoredEventRow[];
  count(sessionId: string, afterId: number, upTo: number): number;
}

/**
 * The SQLite log. `now` answers the same operations synchronously (better-sqlite3): the bus uses
 * it to store and deliver an event before `publish` returns, as it always has on SQLite.
 */
export type SqliteEventStore = EventStore & { readonly now: ImmediateEventStore };

/**
 * Prepares the statements once on the handle. Inside a write transaction an event after the
 * transaction's first is answered its id and held, the transaction's events written by one
 * multi-row INSERT before its next transaction statement or a read of the log
 * (../store/held-rows.ts, p-sqlev): ids as each INSERT would have given them.
 */
export function createEventStore(db: Db): SqliteEventStore {
  const insert = heldRows(db, 'session_events', ['session_id', 'type', 'payload', 'created_at']);
  const maxId = db.prepare('SELECT coalesce(max(id), 0) AS id FROM session_events WHERE session_id = ?');
  const maxIdBefore = db.prepare(
    'SELECT coalesce(max(id), 0) AS id FROM session_events WHERE session_id = ? AND id < ?',
  );
  const after = db.prepare(
    'SELECT id, session_id, type, payload, created_at FROM session_events WHERE session_id = ? AND id > ? ORDER BY id',
  );
  const page = db.prepare(
    'SELECT id, session_id, type, payload, created_at FROM session_events WHERE session_id = ? AND id > ? ORDER BY id LIMIT ?',
  );
  const latest = db.prepare(
    'SELECT id, session_id, type, payload, created_at FROM session_events WHERE session_id = ? AND id > ? ORDER BY id DESC LIMIT ?',
  );
  const count = db.prepare(
    'SELECT count(*) AS n FROM session_events WHERE session_id = ? AND id > ? AND id <= ?',
  );
  const now: ImmediateEventStore = {
    insert: (sessionId, type, payload, createdAt) => insert.insert([sessionId, type, payload, createdAt]),
    maxId: (sessionId) => {
      insert.flush();
      return (maxId.get(sessionId) as { id: number } | undefined)?.id ?? 0;
    },
    maxIdBefore: (sessionId, beforeId) => {
      insert.flush();
      return (maxIdBefore.get(sessionId, beforeId) as { id: number } | undefined)?.id ?? 0;
    },
    after: (sessionId, afterId, limit) => {
      insert.flush();
      return (
        limit === undefined ? after.all(sessionId, afterId) : page.all(sessionId, afterId, limit)
      ) as StoredEventRow[];
    },
    latest: (sessionId, afterId, limit) => {
      insert.flush();
      return (latest.all(sessionId, afterId, limit) as StoredEventRow[]).reverse();
    },
    count: (sessionId, afterId, upTo) => {
      insert.flush();
      return (count.get(sessionId, afterId, upTo) as { n: number }).n;
    },
  };
  return {
    now,
    insert: async (sessionId, type, payload, createdAt) => now.insert(sessionId, type, payload, createdAt),
    maxId: async (sessionId) => now.maxId(sessionId),
    after: async (sessionId, afterId, limit) => now.after(sessionId, afterId, limit),
    latest: async (sessionId, afterId, limit) => now.latest(sessionId, afterId, limit),
    count: async (sessionId, afterId, upTo) => now.count(sessionId, afterId, upTo),
  };
}
