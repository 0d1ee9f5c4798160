/**
 * The bus's log (`session_events`) on PostgreSQL (issue 18): the same semantics as
 * ./event-store.ts (ids from one identity shared by every session, so they increase per session
 * and globally; `after` for a Last-Event-ID replay in id order), every method async. An append
 * also sends `NOTIFY svc_events, '<session id>:<event id>'` in its transaction, so PostgreSQL
 * delivers it only once the row is committed: a listener on another node (./pg-notify.ts) that
 * is woken reads the event from the table. The bus (./bus.ts) takes it as its store; nothing serves from it yet.
 * @module
 */

import type { SqlClient } from '../store/postgres/client';
import type { EventStore, StoredEventRow } from './event-store';

/** The channel an append notifies on; the payload is `<session id>:<event id>`. */
export const EVENTS_CHANNEL = 'svc_events';

export type PostgresEventStore = EventStore;

export function createPostgresEventStore(deps: { sql: SqlClient }): PostgresEventStore {
  const { sql } = deps;
  return {
    insert: (sessionId, type, payload, createdAt) =>
      sql.transaction(async (tx) => {
        const row = await tx.one<{ id: number }>(
          'INSERT INTO session_events (session_id, type, payload, created_at) VALUES ($1, $2, $3, $4) RETURNING id',
          [sessionId, type, payload, createdAt],
        );
        const id = Number(row?.id);
        await tx.query('SELECT pg_notify($1, $2)', [EVENTS_CHANNEL, `${sessionId}:${id}`]);
        return id;
      }),
    maxId: async (sessionId) =>
      (
        await sql.one<{ id: number }>(
          'SELECT coalesce(max(id), 0) AS id FROM session_events WHERE session_id = $1',
          [sessionId],
        )
      )?.id ?? 0,
    after: (sessionId, afterId) =>
      sql.query<StoredEventRow & Record<string, unknown>>(
        'SELECT id, session_id, type, payload, created_at FROM session_events WHERE session_id = $1 AND id > $2 ORDER BY id',
        [sessionId, afterId],
      ),
  };
}
