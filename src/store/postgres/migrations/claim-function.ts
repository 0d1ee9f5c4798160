/**
 * PostgreSQL migration 32 (issue 18, item 6): `svc_claim_run`, a run's claim in one statement
 * when nothing stands in its way. It takes the session's claim lock (the advisory lock of
 * src/runs/pg-run-write-repository.ts `lockSession`), then, reading a new snapshot after the lock
 * (a volatile PL/pgSQL function, READ COMMITTED): if no other run of the session is running, the
 * run moves from queued to running for this owner and is answered; otherwise (another run
 * running, the run not queued or not there) nothing is written and no row is answered, and the
 * caller takes the transaction's path (src/runs/pg-run-ledger.ts `postgresClaim`), which reads
 * why. Outside a transaction the lock ends with the statement; inside one, with the transaction.
 */
export const claimFunctionDdl = `
CREATE OR REPLACE FUNCTION svc_claim_run(
  p_run_id TEXT, p_session_id TEXT, p_now BIGINT, p_pid BIGINT, p_host TEXT, p_runner TEXT
) RETURNS SETOF agent_runs LANGUAGE plpgsql VOLATILE AS $fn$
BEGIN
  PERFORM pg_advisory_xact_lock(hashtext('svc.runs.claim:' || p_session_id));
  IF EXISTS (SELECT 1 FROM agent_runs r
               WHERE r.session_id = p_session_id AND r.status = 'running' AND r.id <> p_run_id) THEN
    RETURN;
  END IF;
  RETURN QUERY
    WITH claimed AS (
      UPDATE agent_runs SET status = 'running', started_at = p_now, updated_at = p_now,
                            pid = p_pid, host = p_host, runner = p_runner
        WHERE id = p_run_id AND session_id = p_session_id AND status = 'queued'
        RETURNING *
    )
    SELECT * FROM claimed;
END
$fn$;
`;
