/**
 * PostgreSQL migration 30 (issue 18, item 6): the two hot appends as server-side functions, so
 * each is one statement (one round trip) instead of a transaction of four or five:
 * - `svc_append_session_event`: the session's advisory lock (the key computed by the caller,
 *   src/events/pg-event-store.ts), the session's highest id before this event, the insert and the
 *   `NOTIFY`, in that order;
 * - `svc_append_run_event`: the run's row lock (FOR UPDATE), the run's next seq, the insert.
 * Each statement of a (volatile) PL/pgSQL function reads a new snapshot under READ COMMITTED, so
 * what is read after the lock sees every append committed before it was granted: the same
 * guarantees as the transactions these replace (ids committed in id order within a session, no
 * seq taken twice). Called inside a transaction, the locks are held until it ends, as before.
 * @module
 */
export const appendFunctionsDdl = `
CREATE OR REPLACE FUNCTION svc_append_session_event(
  p_session_id TEXT, p_type TEXT, p_payload TEXT, p_created_at BIGINT, p_lock_key BIGINT, p_channel TEXT,
  OUT event_id BIGINT, OUT previous_id BIGINT
) LANGUAGE plpgsql VOLATILE AS $fn$
BEGIN
  PERFORM pg_advisory_xact_lock(p_lock_key);
  SELECT coalesce(max(e.id), 0) INTO previous_id FROM session_events e WHERE e.session_id = p_session_id;
  INSERT INTO session_events (session_id, type, payload, created_at)
    VALUES (p_session_id, p_type, p_payload, p_created_at) RETURNING id INTO event_id;
  PERFORM pg_notify(p_channel, p_session_id || ':' || event_id);
END
$fn$;
CREATE OR REPLACE FUNCTION svc_append_run_event(
  p_run_id TEXT, p_session_id TEXT, p_type TEXT, p_payload TEXT, p_created_at BIGINT,
  OUT event_id BIGINT, OUT event_seq BIGINT
) LANGUAGE plpgsql VOLATILE AS $fn$
BEGIN
  PERFORM 1 FROM agent_runs r WHERE r.id = p_run_id FOR UPDATE;
  SELECT coalesce(max(e.seq), 0) + 1 INTO event_seq FROM agent_run_events e WHERE e.run_id = p_run_id;
  INSERT INTO agent_run_events (run_id, session_id, seq, type, payload, created_at)
    VALUES (p_run_id, p_session_id, event_seq, p_type, p_payload, p_created_at) RETURNING id INTO event_id;
END
$fn$;
`;

/**
 * PostgreSQL migration 31 (issue 18, item 6): `svc_append_session_events`, migration 30's session
 * append for several events of one session in one call (the bus's queued events of a session,
 * src/events/bus-writes.ts): one lock, ids drawn in the arrays' order, one `NOTIFY` carrying the
 * batch's last id; it answers each id, ascending, with the session's highest id before the batch.
 */
export const appendBatchDdl = `
CREATE OR REPLACE FUNCTION svc_append_session_events(
  p_session_id TEXT, p_types TEXT[], p_payloads TEXT[], p_created_at BIGINT[], p_lock_key BIGINT, p_channel TEXT
) RETURNS TABLE (event_id BIGINT, previous_id BIGINT) LANGUAGE plpgsql VOLATILE AS $fn$
DECLARE
  v_previous BIGINT;
BEGIN
  PERFORM pg_advisory_xact_lock(p_lock_key);
  SELECT coalesce(max(e.id), 0) INTO v_previous FROM session_events e WHERE e.session_id = p_session_id;
  RETURN QUERY
    WITH ins AS (
      INSERT INTO session_events (session_id, type, payload, created_at)
        SELECT p_session_id, b.type, b.payload, b.created_at
          FROM unnest(p_types, p_payloads, p_created_at) WITH ORDINALITY AS b(type, payload, created_at, ord)
          ORDER BY b.ord
        RETURNING id
    ) SELECT ins.id, v_previous FROM ins ORDER BY ins.id;
  -- Under the lock, the session's highest id is this batch's last.
  PERFORM pg_notify(p_channel, p_session_id || ':' ||
    (SELECT max(e.id) FROM session_events e WHERE e.session_id = p_session_id));
END
$fn$;
`;
