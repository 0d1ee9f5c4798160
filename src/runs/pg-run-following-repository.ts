/**
 * A run event appended in another domain's statement, after that statement's own rows, on
 * PostgreSQL (`RunLedger.followingEvent`, issue 18 item 6, p-pgstep6): its SQL.
 * @module
 */
import type { FollowingWrite, RidingInsert } from '../store/preceding-write';

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

/**
 * Several run events appended in another domain's statement, in their order (`RunLedger.followingEvents`,
 * p-pgride: a step's `phase` and its first tool's `tool.started` after its assistant message's
 * INSERT): a `WITH` named `svc_run_events` over `svc_append_run_event_list` (migration 39: the
 * run's row lock, consecutive seqs in the arrays' order) with its four parameters numbered after
 * `offset` (run id, types, payloads, created_at), run only where `go` holds and the run exists;
 * it answers the events' ids and seqs in their order as a JSON array (null: nothing written).
 */
export function followingEventsSql(offset: number, go: string): { cte: string; answer: string } {
  const n = offset;
  return {
    cte: `${FOLLOWING_EVENTS} AS (SELECT a.event_id, a.event_seq, a.ord, r.session_id
            FROM agent_runs r, LATERAL svc_append_run_event_list(r.id, r.session_id, $${n + 2}::text[], $${n + 3}::text[], $${n + 4}::bigint[]) a
           WHERE r.id = $${n + 1} AND ${go})`,
    answer: `(SELECT json_agg(json_build_object('id', x.event_id, 'seq', x.event_seq, 'session_id', x.session_id) ORDER BY x.ord) FROM ${FOLLOWING_EVENTS} x)`,
  };
}
export const FOLLOWING_EVENTS = 'svc_run_events';

/**
 * `followingEventsSql` handed over (`FollowingWrite.handOver`, p-pglone: a run's held preparation
 * events and `phase` in its last step end, which its finish writes first): the `WITH` appends
 * nothing; it holds the events' arrays (`types`, `payloads`, `created_ats`) where `go` holds, and the
 * finish's own list call (./pg-run-update-event-repository.ts) appends them first, its answer (the
 * same JSON array) the finish's `HANDED_ANSWER` column. The run's row is locked by the finish's
 * UPDATE instead, in the same place of the lock order (after the other domain's rows).
 */
export function handedEventsSql(offset: number, go: string): { cte: string; answer: string } {
  const n = offset;
  return {
    cte: `${FOLLOWING_EVENTS} AS (SELECT $${n + 1}::text AS run_id, $${n + 2}::text[] AS types, $${n + 3}::text[] AS payloads, $${n + 4}::bigint[] AS created_ats
           WHERE ${go})`,
    answer: HANDED_ANSWER,
  };
}
/** The finish's column with the handed events' ids and seqs (`handedEventsSql`), of its run events' `v`. */
export const HANDED_COLUMN = 'svc_handed';
const HANDED_ANSWER = `v.${HANDED_COLUMN}`;

const rowSqls = new WeakMap<NonNullable<RidingInsert['at']>, FollowingWrite['sql']>();
const handedRowSqls = new WeakMap<NonNullable<RidingInsert['at']>, FollowingWrite['sql']>();

/**
 * `followingEventsSql` with another domain's insert (`RunLedger.followingEvents`' `riding`,
 * p-pgprep3: the run's held prompt stack row) as a `WITH` of its own ahead of the events,
 * unconditional (a data-modifying `WITH` runs whenever the statement does), its parameters after
 * theirs; it answers `{ events, riding }` (the events' JSON array, the insert's id). One function
 * per insert's SQL, so a statement's text is kept per shape. `handed`: the events handed over
 * (`handedEventsSql`), the row's `WITH` as before.
 */
export function followingEventsWithRowSql(
  at: NonNullable<RidingInsert['at']>,
  handed = false,
): FollowingWrite['sql'] {
  const sqls = handed ? handedRowSqls : rowSqls;
  let sql = sqls.get(at);
  if (!sql) {
    const events = handed ? handedEventsSql : followingEventsSql;
    sql = (offset, go) => {
      const { cte, answer } = events(offset, go);
      return {
        cte: `${FOLLOWING_ROW} AS (${at(offset + 4)}), ${cte}`,
        answer: `json_build_object('events', ${answer}, 'riding', (SELECT id FROM ${FOLLOWING_ROW}))`,
      };
    };
    sqls.set(at, sql);
  }
  return sql;
}
const FOLLOWING_ROW = 'svc_following_row';
