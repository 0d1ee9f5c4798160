/**
 * PostgreSQL migration 45 (issue 18, item 6, p-pgserver): `svc_append_run_event_list` (migration
 * 39) set-based. It called `svc_append_run_event` once an event (the run's row lock, its next seq,
 * the INSERT and its foreign-key check, and a nested function call, ≈ 0.05 ms of the server's time
 * each); now one call takes the run's row lock once, reads the run's highest seq once after it (a
 * new snapshot: a volatile PL/pgSQL function under READ COMMITTED, so every append committed
 * before the lock was granted is seen) and inserts the whole list in one `INSERT … SELECT FROM
 * unnest … WITH ORDINALITY`: seqs highest + 1.. in the arrays' order, ids drawn in that order, as
 * the appends one after another gave them. No row for the run: nothing locked, the INSERT fails its
 * foreign key, as before. Its statements on generic plans (their `unnest` of array parameters would
 * be planned again every call under `auto`, migration 44). It answers each event's id, seq and
 * place (1..), in the arrays' order.
 */
export const runEventsSetDdl = `
CREATE OR REPLACE FUNCTION svc_append_run_event_list(
  p_run_id TEXT, p_session_id TEXT, p_types TEXT[], p_payloads TEXT[], p_created_at BIGINT[]
) RETURNS TABLE (event_id BIGINT, event_seq BIGINT, ord INTEGER) LANGUAGE plpgsql VOLATILE AS $fn$
DECLARE
  v_base BIGINT;
BEGIN
  IF coalesce(array_length(p_types, 1), 0) = 0 THEN
    RETURN;
  END IF;
  PERFORM 1 FROM agent_runs r WHERE r.id = p_run_id FOR UPDATE;
  SELECT coalesce(max(e.seq), 0) INTO v_base FROM agent_run_events e WHERE e.run_id = p_run_id;
  RETURN QUERY
    WITH ins AS (
      INSERT INTO agent_run_events (run_id, session_id, seq, type, payload, created_at)
        SELECT p_run_id, p_session_id, v_base + b.ord, b.type, b.payload, b.created_at
          FROM unnest(p_types, p_payloads, p_created_at) WITH ORDINALITY AS b(type, payload, created_at, ord)
          ORDER BY b.ord
        RETURNING id, seq
    ) SELECT ins.id, ins.seq, (ins.seq - v_base)::integer FROM ins ORDER BY ins.seq;
END
$fn$;
ALTER FUNCTION svc_append_run_event_list(TEXT, TEXT, TEXT[], TEXT[], BIGINT[])
  SET plan_cache_mode = force_generic_plan;
`;
