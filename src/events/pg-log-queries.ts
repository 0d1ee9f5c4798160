/**
 * Reads of the session event log (`session_events`) on PostgreSQL (issue 18): the same answers as
 * ./log-queries.ts (filters, id order, limits; an empty id or type list matches nothing; a payload
 * that is not a JSON object reads as an empty object).
 * @module
 */
import type { SqlClient } from '../store/postgres/client';
import {
  type EventLogFilter,
  type EventLogQueries,
  type LoggedEventRow,
  type LoggedEventSpan,
  payloadOf,
} from './log-queries';

export function createPostgresEventLogQueries(deps: { sql: SqlClient }): EventLogQueries {
  const { sql } = deps;
  return {
    async find(filter) {
      const { where, params } = whereOf(filter);
      const limit = filter.limit === undefined ? '' : ` LIMIT $${params.push(filter.limit)}`;
      const rows = await sql.query<LoggedEventRow & Record<string, unknown>>(
        `SELECT id, session_id, type, payload, created_at FROM session_events ${where}
          ORDER BY id ${filter.order === 'desc' ? 'DESC' : 'ASC'}${limit}`,
        params,
      );
      return rows.map((row) => ({ ...row, payload: payloadOf(row.payload) }));
    },
    async count(filter) {
      const row = await sql.one<{ n: number }>(
        'SELECT count(*) AS n FROM session_events WHERE session_id = $1 AND type = $2',
        [filter.sessionId, filter.type],
      );
      return row?.n ?? 0;
    },
    async typeCounts(types) {
      return await sql.query<{ type: string; n: number }>(
        'SELECT type, count(*) AS n FROM session_events WHERE type = ANY($1::text[]) GROUP BY type',
        [[...types]],
      );
    },
    async span(types) {
      const row = await sql.one<LoggedEventSpan & Record<string, unknown>>(
        `SELECT min(created_at) AS first_at, max(created_at) AS last_at, count(DISTINCT session_id) AS sessions
           FROM session_events WHERE type = ANY($1::text[])`,
        [[...types]],
      );
      return row ?? { first_at: null, last_at: null, sessions: 0 };
    },
  };
}

function whereOf(filter: EventLogFilter): { where: string; params: unknown[] } {
  const clauses: string[] = [];
  const params: unknown[] = [];
  if (filter.types) clauses.push(`type = ANY($${params.push([...filter.types])}::text[])`);
  if (filter.since !== undefined) clauses.push(`created_at >= $${params.push(filter.since)}`);
  if (filter.afterId !== undefined) clauses.push(`id > $${params.push(filter.afterId)}`);
  if (filter.sessionId !== undefined) clauses.push(`session_id = $${params.push(filter.sessionId)}`);
  if (filter.sessionIds) clauses.push(`session_id = ANY($${params.push([...filter.sessionIds])}::text[])`);
  return { where: clauses.length ? `WHERE ${clauses.join(' AND ')}` : '', params };
}
