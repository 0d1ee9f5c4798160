/**
 * The bus's log (`session_events`) on PostgreSQL (issue 18): the same semantics as
 * ./event-store.ts (ids from one identity shared by every session, so they increase per session
 * and globally; `after` for a Last-Event-ID replay in id order), every method async. An append
 * also sends `NOTIFY svc_events, '<session id>:<event id>'` in its transaction, so PostgreSQL
 * delivers it only once the row is committed: a listener on another node (./pg-notify.ts) that
 * is woken reads the event from the table. The bus (./bus.ts) takes it as its store on a postgres
 * store; `append` also answers the session's previous id, so the bus knows when another node's events
 * came between.
 *
 * An append is one statement, the function `svc_append_session_event` (PostgreSQL migration 30):
 * appends to one session are serialized by a transaction-level advisory lock on the session id,
 * taken before the id is drawn: within a session, ids are committed in id order, so a reader that
 * has seen id N and asks for the events after N never misses one committed later with a smaller id
 * (two nodes appending to one session at once). Other sessions are not held up.
 * @module
 */

import { createHash } from 'node:crypto';
import type { SqlClient } from '../store/postgres/client';
import type { EventStore, QueuedAppend, StoredEventRow } from './event-store';

/** The channel an append notifies on; the payload is `<session id>:<event id>`. */
export const EVENTS_CHANNEL = 'svc_events';

export type PostgresEventStore = EventStore;

export function createPostgresEventStore(deps: { sql: SqlClient }): PostgresEventStore {
  const { sql } = deps;
  // One statement (migration 30, src/store/postgres/migrations/append-functions.ts): the
  // session's advisory lock, its highest id before this event, the insert and the NOTIFY.
  const append: NonNullable<EventStore['append']> = async (sessionId, type, payload, createdAt) => {
    const row = await sql.one<{ event_id: number; previous_id: number }>(
      'SELECT event_id, previous_id FROM svc_append_session_event($1, $2, $3, $4, $5::bigint, $6)',
      [sessionId, type, payload, createdAt, sessionLockKey(sessionId), EVENTS_CHANNEL],
    );
    return { id: Number(row?.event_id), previous: Number(row?.previous_id ?? 0) };
  };
  // Migration 34: events of several sessions, each session's lock (ascending keys), one NOTIFY each.
  const appendAcross: NonNullable<EventStore['appendAcross']> = async (events) => {
    const keys = new Map<string, string>();
    const rows = await sql.query<{ event_id: number; previous_id: number }>(
      'SELECT event_id, previous_id FROM svc_append_events_across($1::text[], $2::text[], $3::text[], $4::bigint[], $5::bigint[], $6)',
      [
        events.map((e) => e.sessionId),
        events.map((e) => e.type),
        events.map((e) => e.payload),
        events.map((e) => e.createdAt),
        events.map((e) => {
          const known = keys.get(e.sessionId);
          if (known !== undefined) return known;
          const key = sessionLockKey(e.sessionId);
          keys.set(e.sessionId, key);
          return key;
        }),
        EVENTS_CHANNEL,
      ],
    );
    return rows.map((row) => ({ id: Number(row.event_id), previous: Number(row.previous_id) }));
  };
  return {
    appendAcross,
    appendCall: appendEventsCall,
    appendNewCall: appendNewEventsCall,
    insert: async (sessionId, type, payload, createdAt) =>
      (await append(sessionId, type, payload, createdAt)).id,
    append,
    maxId: async (sessionId) =>
      (
        await sql.one<{ id: number }>(
          'SELECT coalesce(max(id), 0) AS id FROM session_events WHERE session_id = $1',
          [sessionId],
        )
      )?.id ?? 0,
    after: (sessionId, afterId, limit) =>
      limit === undefined
        ? sql.query<StoredEventRow & Record<string, unknown>>(
            'SELECT id, session_id, type, payload, created_at FROM session_events WHERE session_id = $1 AND id > $2 ORDER BY id',
            [sessionId, afterId],
          )
        : sql.query<StoredEventRow & Record<string, unknown>>(
            'SELECT id, session_id, type, payload, created_at FROM session_events WHERE session_id = $1 AND id > $2 ORDER BY id LIMIT $3',
            [sessionId, afterId, limit],
          ),
    latest: async (sessionId, afterId, limit) =>
      (
        await sql.query<StoredEventRow & Record<string, unknown>>(
          'SELECT id, session_id, type, payload, created_at FROM session_events WHERE session_id = $1 AND id > $2 ORDER BY id DESC LIMIT $3',
          [sessionId, afterId, limit],
        )
      ).reverse(),
    count: async (sessionId, afterId, upTo) =>
      (
        await sql.one<{ n: number }>(
          'SELECT count(*) AS n FROM session_events WHERE session_id = $1 AND id > $2 AND id <= $3',
          [sessionId, afterId, upTo],
        )
      )?.n ?? 0,
  };
}

/**
 * One event's append as a function call another statement makes (`EventBus.join`): the same
 * function and arguments as the bus's own append (its lock, the previous id, the NOTIFY), its
 * parameters numbered from `first`; it answers `event_id` and `previous_id`.
 */
export function appendCall(
  first: number,
  event: { sessionId: string; type: string; payload: string; createdAt: number },
): { text: string; values: unknown[] } {
  return appendEventsCall(first, [event]);
}

/**
 * `appendCall` of several events (`EventBus.joinAll`): one call, the events' ids ascending in
 * their order, one row each (`event_id`, `previous_id`) in that order.
 */
export function appendEventsCall(
  first: number,
  events: readonly QueuedAppend[],
): { text: string; values: unknown[] } {
  const n = (i: number) => `$${first + i}`;
  return {
    text: `svc_append_events_across(${n(0)}::text[], ${n(1)}::text[], ${n(2)}::text[], ${n(3)}::bigint[], ${n(4)}::bigint[], ${n(5)})`,
    values: [
      events.map((e) => e.sessionId),
      events.map((e) => e.type),
      events.map((e) => e.payload),
      events.map((e) => e.createdAt),
      events.map((e) => sessionLockKey(e.sessionId)),
      EVENTS_CHANNEL,
    ],
  };
}

/**
 * `appendEventsCall` for one session the caller's statement inserts (`EventStore.appendNewCall`,
 * p-pglone: a new session's start): its events inserted in their order where `go` holds, the
 * session's highest id before them read from the statement's snapshot (nothing of the session can
 * be committed by another writer while the session is not: its id is known nowhere else), one
 * NOTIFY with its last id; no advisory lock, no function call. The same rows, ids, answers and
 * payload as `svc_append_events_across` gives a session with nothing appended concurrently.
 */
export function appendNewEventsCall(
  first: number,
  events: readonly QueuedAppend[],
  go: string,
): { ctes: string; rows: string; values: unknown[] } {
  const sessionId = events[0]?.sessionId;
  if (events.some((e) => e.sessionId !== sessionId)) throw new Error('appendNewEventsCall: one session only');
  const { ctes, rows } = newEventsText(first, go);
  return {
    ctes,
    rows,
    values: [
      sessionId,
      events.map((e) => e.type),
      events.map((e) => e.payload),
      events.map((e) => e.createdAt),
      EVENTS_CHANNEL,
    ],
  };
}

/**
 * `appendNewEventsCall`'s texts for `first` and `go`, made once each (p-pgappend): the same
 * strings every start, so the start's statement is kept per shape (its key reads them by identity).
 */
function newEventsText(first: number, go: string): { ctes: string; rows: string } {
  const key = `${first} ${go}`;
  let text = newEventsTexts.get(key);
  if (!text) {
    text = newEventsTextOf(first, go);
    if (newEventsTexts.size >= NEW_EVENTS_TEXTS_KEPT) newEventsTexts.clear();
    newEventsTexts.set(key, text);
  }
  return text;
}
const newEventsTexts = new Map<string, { ctes: string; rows: string }>();
const NEW_EVENTS_TEXTS_KEPT = 16;

function newEventsTextOf(first: number, go: string): { ctes: string; rows: string } {
  const n = (i: number) => `$${first + i}`;
  return {
    ctes: `svc_new_prev AS MATERIALIZED (SELECT coalesce(max(id), 0) AS previous FROM session_events WHERE session_id = ${n(0)}::text),
           svc_new_ins AS (INSERT INTO session_events (session_id, type, payload, created_at)
                   SELECT ${n(0)}::text, b.type, b.payload, b.created_at
                     FROM unnest(${n(1)}::text[], ${n(2)}::text[], ${n(3)}::bigint[]) WITH ORDINALITY AS b(type, payload, created_at, ord)
                    WHERE ${go} ORDER BY b.ord
                   RETURNING id),
           svc_new_notified AS MATERIALIZED (SELECT pg_notify(${n(4)}, ${n(0)}::text || ':' || max(i.id)) FROM svc_new_ins i HAVING count(*) > 0)`,
    rows: `(SELECT i.id AS event_id, p.previous AS previous_id FROM svc_new_ins i CROSS JOIN svc_new_prev p
              WHERE (SELECT count(*) FROM svc_new_notified) >= 0)`,
  };
}

/** Lock keys of the sessions appended to lately (a SHA-256 each, ≈ 5 appends a step): bounded, then started over. */
const lockKeys = new Map<string, string>();
const LOCK_KEYS_KEPT = 1024;

/** A 64-bit advisory lock key for a session's appends (distinct from svc's other lock keys by prefix). */
export function sessionLockKey(sessionId: string): string {
  const known = lockKeys.get(sessionId);
  if (known !== undefined) return known;
  const key = createHash('sha256')
    .update(`svc:session_events:${sessionId}`)
    .digest()
    .readBigInt64BE(0)
    .toString();
  if (lockKeys.size >= LOCK_KEYS_KEPT) lockKeys.clear();
  lockKeys.set(sessionId, key);
  return key;
}
