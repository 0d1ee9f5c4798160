/**
 * A new run's INSERT with another domain's insert first (p-pgcompat): a compat request's new
 * session (src/sessions/pg-session-store.ts `createHeld`) goes in the statement that inserts the
 * session's first run and its `run.queued` event, one statement of the start's transaction
 * instead of two. The run's foreign key on its session is checked at the statement's end, after
 * both inserts. Both or neither: a failing session INSERT fails the run's, as it failed the
 * transaction before.
 * @module
 */
import type { SqlClient } from '../store/postgres/client';
import type { RidingInsert } from '../store/preceding-write';
import {
  insertStatement,
  type PgRunRowWithEvent,
  type PostgresRunWrites,
  type RunEventWrite,
  splitEvent,
} from './pg-run-write-repository';

/** `PostgresRunWrites.insertRunWithEvent` with `riding` as the statement's first `WITH`. */
export async function insertRunAfter(
  sql: SqlClient,
  row: Parameters<PostgresRunWrites['insertRunWithEvent']>[0],
  event: RunEventWrite,
  riding: RidingInsert,
): ReturnType<PostgresRunWrites['insertRunWithEvent']> {
  const k = riding.values.length;
  const [text, params] = insertStatement(row);
  // The run's parameters are numbered after the riding insert's.
  const shifted = text.replace(/\$(\d+)/g, (_, d: string) => `$${Number(d) + k}`);
  const n = k + params.length;
  const inserted = await sql.one<PgRunRowWithEvent>(
    `WITH riding AS (${riding.text}),
       r AS (${shifted} RETURNING *),
       e AS (INSERT INTO agent_run_events (run_id, session_id, seq, type, payload, created_at)
               SELECT r.id, r.session_id, 1, $${n + 1}, $${n + 2}, $${n + 3} FROM r RETURNING id, seq)
     SELECT r.*, e.id AS svc_event_id, e.seq AS svc_event_seq FROM r, e`,
    [...riding.values, ...params, event.type, event.payload, event.created_at],
  );
  if (!inserted) throw new Error(`agent_runs: no row returned for run ${row.id}`);
  return splitEvent(inserted);
}
