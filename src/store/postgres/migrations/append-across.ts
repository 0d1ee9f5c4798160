/**
 * PostgreSQL migration 34 (issue 18, item 6): `svc_append_events_across`, migration 31's batch
 * append for the events of several sessions in one call (the bus's queued events, whatever their
 * session, src/events/bus-writes.ts): each session's advisory lock, taken in ascending key order
 * (two callers locking the same sessions never wait for each other in a cycle), each session's
 * highest id before the batch, the events inserted in the arrays' order (ids ascending in that
 * order), and one `NOTIFY` per session carrying its last id in the batch. It answers each event's
 * id with its session's highest id before the batch, in the arrays' order.
 */
export const appendAcrossDdl = `
CREATE OR REPLACE FUNCTION svc_append_events_across(
  p_session_ids TEXT[], p_types TEXT[], p_payloads TEXT[], p_created_at BIGINT[], p_lock_keys BIGINT[],
  p_channel TEXT
) RETURNS TABLE (event_id BIGINT, previous_id BIGINT) LANGUAGE plpgsql VOLATILE AS $fn$
DECLARE
  v_key BIGINT;
BEGIN
  FOR v_key IN SELECT DISTINCT k FROM unnest(p_lock_keys) AS k ORDER BY 1 LOOP
    PERFORM pg_advisory_xact_lock(v_key);
  END LOOP;
  RETURN QUERY
    WITH prev AS (
      SELECT s.sid, coalesce((SELECT max(e.id) FROM session_events e WHERE e.session_id = s.sid), 0) AS previous
        FROM (SELECT DISTINCT sid FROM unnest(p_session_ids) AS sid) s
    ), ins AS (
      INSERT INTO session_events (session_id, type, payload, created_at)
        SELECT b.sid, b.type, b.payload, b.created_at
          FROM unnest(p_session_ids, p_types, p_payloads, p_created_at)
               WITH ORDINALITY AS b(sid, type, payload, created_at, ord)
          ORDER BY b.ord
        RETURNING id, session_id
    ) SELECT ins.id, prev.previous FROM ins JOIN prev ON prev.sid = ins.session_id ORDER BY ins.id;
  -- Under the locks, each session's highest id is its last in this batch.
  PERFORM pg_notify(p_channel, s.sid || ':' ||
      (SELECT max(e.id) FROM session_events e WHERE e.session_id = s.sid))
    FROM (SELECT DISTINCT sid FROM unnest(p_session_ids) AS sid) s;
END
$fn$;
`;
