/**
 * Reads of the session event log (`session_events`, what the bus persisted) for the read models
 * that look back further than a bus subscriber can: health readouts, the journal, the cue ledger,
 * session observability. Read-only; the bus (./bus.ts) owns the writes and the replay. Async
 * (issue 18): `EventLogQueries`, with its PostgreSQL twin in ./pg-log-queries.ts; the functions
 * over a `Db` below are the SQLite one, as the read models call it today.
 * @module
 */
import type { Db } from '../store/db';
import { flushHeld } from '../store/transaction-memo';
import type { SessionEvent } from './bus';

/** Which logged events to read. Lists that are given but empty match nothing. */
export interface EventLogFilter {
  types?: readonly string[];
  sessionId?: string;
  sessionIds?: readonly string[];
  /** Only events created at or after this time (ms). */
  since?: number;
  /** Only events after this id (exclusive). */
  afterId?: number;
  /** By id: `asc` (the order they happened, default) or `desc` (newest first). */
  order?: 'asc' | 'desc';
  limit?: number;
}

export type LoggedEventRow = Omit<SessionEvent, 'payload'> & { payload: string };

/** When events of some types were logged, and in how many sessions. */
export interface LoggedEventSpan {
  first_at: number | null;
  last_at: number | null;
  sessions: number;
}

export interface EventLogQueries {
  find(filter: EventLogFilter): Promise<SessionEvent[]>;
  count(filter: { sessionId: string; type: string }): Promise<number>;
  /** Logged events per type, among these types. */
  typeCounts(types: readonly string[]): Promise<{ type: string; n: number }[]>;
  span(types: readonly string[]): Promise<LoggedEventSpan>;
}

const marks = (values: readonly unknown[]) => values.map(() => '?').join(', ') || 'NULL';

/** A stored payload; anything but a JSON object (or malformed text) reads as an empty object. */
export function payloadOf(text: string): Record<string, unknown> {
  try {
    const value = JSON.parse(text) as unknown;
    return value && typeof value === 'object' && !Array.isArray(value)
      ? (value as Record<string, unknown>)
      : {};
  } catch {
    return {};
  }
}

/** The SQLite queries on a handle, as the read models call them. */
export async function findLoggedEvents(db: Db, filter: EventLogFilter): Promise<SessionEvent[]> {
  return await createEventLogQueries(() => db).find(filter);
}

export async function countLoggedEvents(
  db: Db,
  filter: { sessionId: string; type: string },
): Promise<number> {
  return await createEventLogQueries(() => db).count(filter);
}

/** Logged events per type, among these types. */
export async function loggedEventTypeCounts(
  db: Db,
  types: readonly string[],
): Promise<{ type: string; n: number }[]> {
  return await createEventLogQueries(() => db).typeCounts(types);
}

/** When events of these types were logged, and in how many sessions. */
export async function loggedEventSpan(db: Db, types: readonly string[]): Promise<LoggedEventSpan> {
  return await createEventLogQueries(() => db).span(types);
}

export function createEventLogQueries(db: () => Db): EventLogQueries {
  return {
    find: async (filter) => findLoggedEventsNow(written(db()), filter),
    count: async (filter) => countLoggedEventsNow(written(db()), filter),
    typeCounts: async (types) => loggedEventTypeCountsNow(written(db()), types),
    span: async (types) => loggedEventSpanNow(written(db()), types),
  };
}

/** The handle with the events its open transaction holds written (../store/held-rows.ts). */
function written(db: Db): Db {
  flushHeld(db);
  return db;
}

function findLoggedEventsNow(db: Db, filter: EventLogFilter): SessionEvent[] {
  const clauses: string[] = [];
  const params: unknown[] = [];
  if (filter.types) {
    clauses.push(`type IN (${marks(filter.types)})`);
    params.push(...filter.types);
  }
  if (filter.since !== undefined) {
    clauses.push('created_at >= ?');
    params.push(filter.since);
  }
  if (filter.afterId !== undefined) {
    clauses.push('id > ?');
    params.push(filter.afterId);
  }
  if (filter.sessionId !== undefined) {
    clauses.push('session_id = ?');
    params.push(filter.sessionId);
  }
  if (filter.sessionIds) {
    clauses.push(`session_id IN (${marks(filter.sessionIds)})`);
    params.push(...filter.sessionIds);
  }
  const rows = db
    .prepare(
      `SELECT id, session_id, type, payload, created_at FROM session_events
        ${clauses.length ? `WHERE ${clauses.join(' AND ')}` : ''}
        ORDER BY id ${filter.order === 'desc' ? 'DESC' : 'ASC'}${filter.limit === undefined ? '' : ' LIMIT ?'}`,
    )
    .all(...params, ...(filter.limit === undefined ? [] : [filter.limit])) as LoggedEventRow[];
  return rows.map((row) => ({ ...row, payload: payloadOf(row.payload) }));
}

function countLoggedEventsNow(db: Db, filter: { sessionId: string; type: string }): number {
  return (
    db
      .prepare('SELECT count(*) AS n FROM session_events WHERE session_id = ? AND type = ?')
      .get(filter.sessionId, filter.type) as { n: number }
  ).n;
}

/** Logged events per type, among these types. */
function loggedEventTypeCountsNow(db: Db, types: readonly string[]): { type: string; n: number }[] {
  return db
    .prepare(`SELECT type, count(*) AS n FROM session_events WHERE type IN (${marks(types)}) GROUP BY type`)
    .all(...types) as { type: string; n: number }[];
}

/** When events of these types were logged, and in how many sessions. */
function loggedEventSpanNow(db: Db, types: readonly string[]): LoggedEventSpan {
  return db
    .prepare(
      `SELECT min(created_at) AS first_at, max(created_at) AS last_at, count(DISTINCT session_id) AS sessions
         FROM session_events WHERE type IN (${marks(types)})`,
    )
    .get(...types) as LoggedEventSpan;
}
