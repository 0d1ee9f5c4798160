/**
 * The bus's log (`session_events`): appending a published event, the highest id of a session, and
 * the events after an id for a replay older than the ring. Other reads: ./log-queries.ts.
 * @module
 */
import type { Db } from '../store/db';

/** A stored event; the payload is JSON text. */
export interface StoredEventRow {
  id: number;
  session_id: string;
  type: string;
  payload: string;
  created_at: number;
}

export interface EventStore {
  /** Appends an event; returns its id. */
  insert(sessionId: string, type: string, payload: string, createdAt: number): number;
  /** Highest id logged for the session (0 when none). */
  maxId(sessionId: string): number;
  /** The session's events after `afterId` (exclusive), in id order. */
  after(sessionId: string, afterId: number): StoredEventRow[];
}

/** Prepares the statements once on the handle. */
export function createEventStore(db: Db): EventStore {
  const insert = db.prepare(
    'INSERT INTO session_events (session_id, type, payload, created_at) VALUES (?, ?, ?, ?)',
  );
  const maxId = db.prepare('SELECT coalesce(max(id), 0) AS id FROM session_events WHERE session_id = ?');
  const after = db.prepare(
    'SELECT id, session_id, type, payload, created_at FROM session_events WHERE session_id = ? AND id > ? ORDER BY id',
  );
  return {
    insert: (sessionId, type, payload, createdAt) =>
      Number(insert.run(sessionId, type, payload, createdAt).lastInsertRowid),
    maxId: (sessionId) => (maxId.get(sessionId) as { id: number } | undefined)?.id ?? 0,
    after: (sessionId, afterId) => after.all(sessionId, afterId) as StoredEventRow[],
  };
}
