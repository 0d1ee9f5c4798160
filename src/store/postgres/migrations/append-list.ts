/**
 * PostgreSQL migration 39 (issue 18, item 6, p-pgprep): `svc_append_run_event_list`, migration
 * 30's run append for several events of one run in one call, in the arrays' order: each through
 * `svc_append_run_event` (the run's row lock, held from the first on; its next seq read after the
 * previous insert, a new snapshot per statement of the volatile function), so the events take
 * consecutive seqs in that order, as the same appends one after another would. A run's preparation
 * (`model.resolved`, `prompt.assembled`, src/agent/run-loop.ts) is one statement instead of one
 * each. It answers each event's id and seq, in the arrays' order.
 */
export const appendListDdl = `
CREATE OR REPLACE FUNCTION svc_append_run_event_list(
  p_run_id TEXT, p_session_id TEXT, p_types TEXT[], p_payloads TEXT[], p_created_at BIGINT[]
) RETURNS TABLE (event_id BIGINT, event_seq BIGINT, ord INTEGER) LANGUAGE plpgsql VOLATILE AS $fn$
DECLARE
  i INTEGER;
BEGIN
  FOR i IN 1 .. coalesce(array_length(p_types, 1), 0) LOOP
    SELECT a.event_id, a.event_seq INTO event_id, event_seq
      FROM svc_append_run_event(p_run_id, p_session_id, p_types[i], p_payloads[i], p_created_at[i]) a;
    ord := i;
    RETURN NEXT;
  END LOOP;
END
$fn$;
`;
