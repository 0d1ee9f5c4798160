/**
 * A new run's INSERT with its first event (seq 1) in one statement: nobody else can append to a
 * run not yet inserted, so its first seq is 1, as `insertEvent` would take it. With `riding`,
 * another domain's insert goes first in the same statement (p-pgcompat): a compat request's new
 * session (src/sessions/pg-session-store.ts `createHeld`) with the session's first run and its
 * `run.queued` event, one statement of the start's transaction instead of two. The run's foreign
 * key on its session is checked at the statement's end, after both inserts. Both or neither: a
 * failing session INSERT fails the run's, as it failed the transaction before.
 * @module
 */
import type { SqlClient } from '../store/postgres/client';
import type { RidingInsert } from '../store/preceding-write';
import {
  insertStatement,
  type PgRunRowWithEvent,
  type RunEventWrite,
  splitEvent,
} from './pg-run-write-repository';
import type { RunRowInsert } from './run-repository';
import type { AgentRun } from './types';

/** The run's INSERT and its first event (`riding`'s insert first, when given) in one statement. */
export async function insertRunWithEvent(
  sql: SqlClient,
  row: RunRowInsert,
  event: RunEventWrite,
  riding?: RidingInsert,
): Promise<{ run: AgentRun; event: { id: number; seq: number } }> {
  const k = riding?.values.length ?? 0;
  // The run's parameters are numbered after the riding insert's.
  const [text, params] = insertStatement(row, k);
  const n = k + params.length;
  const first = riding ? `riding AS (${riding.text}),\n       ` : '';
  const inserted = await sql.one<PgRunRowWithEvent>(
    `WITH ${first}r AS (${text} RETURNING *),
           e AS (INSERT INTO agent_run_events (run_id, session_id, seq, type, payload, created_at)
                   SELECT r.id, r.session_id, 1, $${n + 1}, $${n + 2}, $${n + 3} FROM r RETURNING id, seq)
         SELECT r.*, e.id AS svc_event_id, e.seq AS svc_event_seq FROM r, e`,
    [...(riding?.values ?? []), ...params, event.type, event.payload, event.created_at],
  );
  if (!inserted) throw new Error(`agent_runs: no row returned for run ${row.id}`);
  return splitEvent(inserted);
}
