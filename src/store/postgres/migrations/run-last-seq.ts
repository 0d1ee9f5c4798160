/**
 * PostgreSQL migration 48 (issue 18, item 6, p-lastseq): `svc_run_last_seq`, a run's highest event
 * seq (0: none) read by a volatile function, so a statement that already holds the run's row lock
 * (a finish's UPDATE) inserts its run events itself instead of calling `svc_append_run_event_list`
 * (migration 45: a lock statement, the seq read, the INSERT under `RETURN QUERY`). Read in the
 * statement itself, `max(seq)` would see the statement's snapshot, taken before the lock was
 * granted: an append another connection committed while the UPDATE waited would be missed and its
 * seqs taken twice. The function's query takes a snapshot of its own when it runs (PL/pgSQL,
 * volatile, READ COMMITTED), after the UPDATE locked the row: every append committed before then
 * is seen, as the list function's read after its lock saw them. Its one query is planned once a
 * connection (PL/pgSQL's plan cache; a `LANGUAGE sql` body was planned every call and measured
 * slower than migration 45's function).
 */
export const runLastSeqDdl = `
CREATE OR REPLACE FUNCTION svc_run_last_seq(p_run_id TEXT) RETURNS BIGINT LANGUAGE plpgsql VOLATILE AS $fn$
BEGIN
  RETURN (SELECT coalesce(max(e.seq), 0) FROM agent_run_events e WHERE e.run_id = p_run_id);
END
$fn$;
`;
