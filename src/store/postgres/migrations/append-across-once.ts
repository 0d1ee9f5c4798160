/**
 * PostgreSQL migration 46 (issue 18, item 6, p-pgserver): `svc_append_events_across` (migrations
 * 34, 44) with its inserts, answers and `NOTIFY`s in one statement after the locks. Its `prev`
 * (each session's highest id before the batch) was inlined into the join and read once an event
 * (an index probe each, after the INSERT, from the statement's snapshot: right, but one a row), and
 * the `NOTIFY`s were a statement of their own reading each session's highest id again; now `prev`
 * is read once a session (MATERIALIZED) and each session's `NOTIFY` carries its last id in the
 * INSERT's own rows (under the locks, the session's highest). The same answers and notifications,
 * the locks taken as before (each session's, in ascending key order); still on generic plans.
 * ≈ 0.02–0.05 ms of the server's time a call of seven events (bench/append-across.mjs), two calls a
 * lone compat request.
 */
export const appendAcrossOnceDdl = `
CREATE OR REPLACE FUNCTION svc_append_events_across(
  p_session_ids TEXT[], p_types TEXT[], p_payloads TEXT[], p_created_at BIGINT[], p_lock_keys BIGINT[],
  p_channel TEXT
) RETURNS TABLE (event_id BIGINT, previous_id BIGINT) LANGUAGE plpgsql VOLATILE
SET plan_cache_mode = force_generic_plan AS $fn$
DECLARE
  v_key BIGINT;
BEGIN
  FOR v_key IN SELECT DISTINCT k FROM unnest(p_lock_keys) AS k ORDER BY 1 LOOP
    PERFORM pg_advisory_xact_lock(v_key);
  END LOOP;
  RETURN QUERY
    WITH prev AS MATERIALIZED (
      SELECT s.sid, coalesce((SELECT max(e.id) FROM session_events e WHERE e.session_id = s.sid), 0) AS previous
        FROM (SELECT DISTINCT sid FROM unnest(p_session_ids) AS sid) s
    ), ins AS (
      INSERT INTO session_events (session_id, type, payload, created_at)
        SELECT b.sid, b.type, b.payload, b.created_at
          FROM unnest(p_session_ids, p_types, p_payloads, p_created_at)
               WITH ORDINALITY AS b(sid, type, payload, created_at, ord)
          ORDER BY b.ord
        RETURNING id, session_id
    ), notified AS MATERIALIZED (
      -- Under the locks, each session's highest id is its last in this batch.
      SELECT pg_notify(p_channel, i.session_id || ':' || max(i.id)) FROM ins i GROUP BY i.session_id
    ) SELECT ins.id, prev.previous FROM ins JOIN prev ON prev.sid = ins.session_id
       WHERE (SELECT count(*) FROM notified) >= 0 ORDER BY ins.id;
END
$fn$;
`;
