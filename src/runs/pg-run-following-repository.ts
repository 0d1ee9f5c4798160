/**
 * A run event appended in another domain's statement, after that statement's own rows, on
 * PostgreSQL (`RunLedger.followingEvent`, issue 18 item 6, p-pgstep6): its SQL.
 * @module
 */

/**
 * A run event appended in another domain's statement, after that statement's own rows
 * (`RunLedger.followingEvent`, p-pgstep6: a step's `phase` in its assistant message's INSERT):
 * a `WITH` named `svc_run_event` with its four parameters numbered after `offset` (run id, type,
 * payload, created_at), run only where `go` holds and the run exists (LATERAL on its row: the
 * run's row lock, then its next seq, as `insertEvent`), and the JSON it answers (null: nothing
 * written).
 */
export function followingEventSql(offset: number, go: string): { cte: string; answer: string } {
  const n = offset;
  return {
    cte: `${FOLLOWING_EVENT} AS (SELECT a.event_id, a.event_seq, r.session_id
            FROM agent_runs r, LATERAL svc_append_run_event(r.id, r.session_id, $${n + 2}, $${n + 3}, $${n + 4}) a
           WHERE r.id = $${n + 1} AND ${go})`,
    answer: `(SELECT json_build_object('id', x.event_id, 'seq', x.event_seq, 'session_id', x.session_id) FROM ${FOLLOWING_EVENT} x)`,
  };
}
export const FOLLOWING_EVENT = 'svc_run_event';
