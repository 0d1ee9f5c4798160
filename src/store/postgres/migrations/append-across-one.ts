/**
 * PostgreSQL migration 47 (issue 18, item 6, p-pgappend): `svc_append_events_across` (migrations
 * 34, 44, 46) with a path of its own for the events of one session, every call a compat request
 * and an agent-loop step makes (a step end's, a finish's, a tool's events: `EventBus.joinAll`
 * joins one session's). Migration 46 took its locks in a loop over a query of the distinct keys
 * (a cursor, then a statement a key) and its one statement grouped the sessions twice (`prev`'s
 * DISTINCT, the NOTIFYs' GROUP BY) and joined the inserted rows to `prev`. With every key equal
 * (one session: the caller computes one key a session) the lock is one expression, evaluated
 * without the executor (PL/pgSQL's simple-expression path), and the statement after it reads
 * the session's highest id once, inserts, notifies with the inserted rows' highest id and answers
 * each row with that previous id: no DISTINCT, no GROUP BY, no join. Several sessions take
 * migration 46's body, unchanged. The same rows, ids, answers, NOTIFY payloads and locks (the
 * session's, taken before the statement whose fresh snapshot reads its previous id); still on
 * generic plans. The signature is the same, so every caller (and a node of the previous release)
 * gets it without a change of text.
 */
export const appendAcrossOneDdl = `
CREATE OR REPLACE FUNCTION svc_append_events_across(
  p_session_ids TEXT[], p_types TEXT[], p_payloads TEXT[], p_created_at BIGINT[], p_lock_keys BIGINT[],
  p_channel TEXT
) RETURNS TABLE (event_id BIGINT, previous_id BIGINT) LANGUAGE plpgsql VOLATILE
SET plan_cache_mode = force_generic_plan AS $fn$
DECLARE
  v_key BIGINT;
  v_locked BOOLEAN;
BEGIN
  IF p_lock_keys[1] = ALL (p_lock_keys) AND p_session_ids[1] = ALL (p_session_ids) THEN
    -- One session: its lock as a simple expression (no query, no loop).
    v_locked := pg_advisory_xact_lock(p_lock_keys[1]) IS NULL;
    RETURN QUERY
      WITH prev AS MATERIALIZED (
        SELECT coalesce(max(e.id), 0) AS previous FROM session_events e WHERE e.session_id = p_session_ids[1]
      ), ins AS (
        INSERT INTO session_events (session_id, type, payload, created_at)
          SELECT p_session_ids[1], b.type, b.payload, b.created_at
            FROM unnest(p_types, p_payloads, p_created_at) WITH ORDINALITY AS b(type, payload, created_at, ord)
            ORDER BY b.ord
          RETURNING id
      ), notified AS MATERIALIZED (
        -- Under the lock, the session's highest id is its last in this call.
        SELECT pg_notify(p_channel, p_session_ids[1] || ':' || max(i.id)) FROM ins i HAVING count(*) > 0
      ) SELECT ins.id, prev.previous FROM ins CROSS JOIN prev
         WHERE (SELECT count(*) FROM notified) >= 0 ORDER BY ins.id;
    RETURN;
  END IF;
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
