/**
 * PostgreSQL migration 33 (issue 18, item 6): `svc_claim_run_started`, migration 32's claim and
 * the run's `run.started` event in one statement. Under the session's claim lock, as
 * `svc_claim_run`: when nothing stands in its way, the queued run moves to running for this owner
 * and, under the run's row lock the UPDATE holds, `run.started` is appended with the run's next
 * seq (as `svc_append_run_event` takes it) at the claim's time. Its payload is the text
 * src/agent/run-control.ts writes, `JSON.stringify({ agent, origin, pid, options })` of the claimed
 * run (`options` is stored as that JSON text). It answers the claimed run's row and the event's id
 * and seq (`svc_event_id`, `svc_event_seq`); no row: nothing written (the caller takes the
 * transaction's path, src/runs/pg-run-ledger.ts `postgresClaim`).
 */
export const claimStartedDdl = `
CREATE OR REPLACE FUNCTION svc_claim_run_started(
  p_run_id TEXT, p_session_id TEXT, p_now BIGINT, p_pid BIGINT, p_host TEXT, p_runner TEXT
) RETURNS TABLE (run agent_runs, svc_event_id BIGINT, svc_event_seq BIGINT)
LANGUAGE plpgsql VOLATILE AS $fn$
DECLARE
  v_run agent_runs;
  v_seq BIGINT;
  v_id BIGINT;
BEGIN
  PERFORM pg_advisory_xact_lock(hashtext('svc.runs.claim:' || p_session_id));
  IF EXISTS (SELECT 1 FROM agent_runs r
               WHERE r.session_id = p_session_id AND r.status = 'running' AND r.id <> p_run_id) THEN
    RETURN;
  END IF;
  UPDATE agent_runs SET status = 'running', started_at = p_now, updated_at = p_now,
                        pid = p_pid, host = p_host, runner = p_runner
    WHERE id = p_run_id AND session_id = p_session_id AND status = 'queued'
    RETURNING * INTO v_run;
  IF NOT FOUND THEN
    RETURN;
  END IF;
  SELECT coalesce(max(e.seq), 0) + 1 INTO v_seq FROM agent_run_events e WHERE e.run_id = p_run_id;
  INSERT INTO agent_run_events (run_id, session_id, seq, type, payload, created_at)
    VALUES (p_run_id, p_session_id, v_seq, 'run.started',
            '{"agent":' || to_json(v_run.agent)::text || ',"origin":' || to_json(v_run.origin)::text
              || ',"pid":' || coalesce(v_run.pid::text, 'null') || ',"options":' || v_run.options || '}',
            p_now)
    RETURNING id INTO v_id;
  RETURN QUERY SELECT v_run, v_id, v_seq;
END
$fn$;
`;
