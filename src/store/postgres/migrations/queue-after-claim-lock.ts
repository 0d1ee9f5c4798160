/**
 * PostgreSQL migration 41 (issue 18, item 6, p-pgcompat): `svc_session_has_queued`, whether a
 * session has queued runs, read under the session's claim lock (the advisory lock of
 * src/runs/pg-run-write-repository.ts `lockSession` and migration 32's `svc_claim_run`) with a
 * snapshot taken after the lock (a volatile PL/pgSQL function, READ COMMITTED). A run's finish
 * calls it in its own statement, so the queue is known without a read after the commit: a claim
 * that another node decided under the lock before it (blocked by the finishing run, its queued run
 * left for the finish's drain) committed before the lock was granted here, so its run is seen;
 * a claim after it waits for the finish's commit and sees the run finished, so it claims. Outside
 * a transaction the lock ends with the statement; inside one, with the transaction.
 */
export const queueAfterClaimLockDdl = `
CREATE OR REPLACE FUNCTION svc_session_has_queued(p_session_id TEXT)
RETURNS BOOLEAN LANGUAGE plpgsql VOLATILE AS $fn$
BEGIN
  PERFORM pg_advisory_xact_lock(hashtext('svc.runs.claim:' || p_session_id));
  RETURN EXISTS (SELECT 1 FROM agent_runs r WHERE r.session_id = p_session_id AND r.status = 'queued');
END
$fn$;
`;
