/**
 * PostgreSQL migration 35 (issue 18, item 6): a change signal for the tables whose reads a node
 * keeps in memory (../table-changes.ts): `recommendations`, `codebase_context_cache`, `findings`
 * and `edit_capsules`. A statement-level trigger on each sends `NOTIFY svc_table_changes,
 * '<table>'` after every INSERT, UPDATE, DELETE or TRUNCATE, however many rows it touched (none
 * included). PostgreSQL delivers a NOTIFY only once its transaction commits (a rolled-back write
 * notifies nothing) and folds identical ones of one transaction into one, so a node's LISTEN
 * connection (src/events/pg-notify.ts) hears of every committed change of these tables, whoever
 * made it. The channel name is `TABLE_CHANGES_CHANNEL`; keep the two the same.
 */
export const tableChangesDdl = `
CREATE OR REPLACE FUNCTION svc_notify_table_change() RETURNS trigger LANGUAGE plpgsql AS $fn$
BEGIN
  PERFORM pg_notify('svc_table_changes', TG_TABLE_NAME);
  RETURN NULL;
END
$fn$;
CREATE TRIGGER svc_table_changes AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON recommendations
  FOR EACH STATEMENT EXECUTE FUNCTION svc_notify_table_change();
CREATE TRIGGER svc_table_changes AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON codebase_context_cache
  FOR EACH STATEMENT EXECUTE FUNCTION svc_notify_table_change();
CREATE TRIGGER svc_table_changes AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON findings
  FOR EACH STATEMENT EXECUTE FUNCTION svc_notify_table_change();
CREATE TRIGGER svc_table_changes AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON edit_capsules
  FOR EACH STATEMENT EXECUTE FUNCTION svc_notify_table_change();
`;

/**
 * PostgreSQL migration 40 (issue 18, item 6): `adaptive_sessions` joins the watched tables, so a
 * node keeps which sessions have a pending reshape proposal (src/adaptive/pg-adaptive-store.ts)
 * instead of reading the session's row at every idle state (once per compat request). Same
 * function and channel as migration 35.
 */
export const adaptiveChangesDdl = `
CREATE TRIGGER svc_table_changes AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON adaptive_sessions
  FOR EACH STATEMENT EXECUTE FUNCTION svc_notify_table_change();
`;

/**
 * PostgreSQL migration 43 (issue 18, item 6): `sessions` joins the watched tables, so a node keeps
 * session rows (src/sessions/pg-kept-sessions.ts) instead of reading the row at every
 * `sessions.get` (a tool's read of its session: once a step). Every message append and step end
 * updates the row, so this notifies with most statements of a run; a node does not count the
 * notifications of its own connections for this table (it marks its own writes when they answer,
 * ../table-changes.ts), only other nodes'. Same function and channel as migration 35.
 */
export const sessionChangesDdl = `
CREATE TRIGGER svc_table_changes AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON sessions
  FOR EACH STATEMENT EXECUTE FUNCTION svc_notify_table_change();
`;

/**
 * PostgreSQL migration 49 (issue 18, item 6, p-pgserver3): the `sessions` trigger (migration 43)
 * without INSERT. What listens for this table is the kept session rows
 * (src/sessions/pg-kept-sessions.ts): a node keeps only a row it read or wrote, so a session
 * inserted on another node is one it cannot keep (a read before the INSERT committed found no
 * row, and no row is kept as missing); a row that goes away and comes back under the same id is
 * dropped by its DELETE's notification. An INSERT notified only to make every other node drop
 * every row it kept, and cost its statement the trigger's call and a NOTIFY (a new session's
 * compat start: one a request). UPDATE, DELETE and TRUNCATE notify as before; an
 * `INSERT … ON CONFLICT DO UPDATE` still fires the UPDATE trigger.
 */
export const sessionChangesWithoutInsertDdl = `
DROP TRIGGER svc_table_changes ON sessions;
CREATE TRIGGER svc_table_changes AFTER UPDATE OR DELETE OR TRUNCATE ON sessions
  FOR EACH STATEMENT EXECUTE FUNCTION svc_notify_table_change();
`;
