/**
 * PostgreSQL migration 21 (issue 19, item 4): `permission_requests`, the pending permission
 * requests of runs as rows (src/permissions/pg-permission-request-repository.ts), so that any node
 * lists and answers them and a run resumed on another node waits for the same request. A request
 * is open while `decision` is NULL; the first answer sets it (one conditional UPDATE), and
 * `closed_at` records when the waiting run took it. Read and written on PostgreSQL only (SQLite
 * migration 835 creates the same table, unused: a request there is a wait in the agent's process).
 * @module
 */
export const permissionRequestsDdl = `
CREATE TABLE permission_requests (
  request_id TEXT PRIMARY KEY,
  session_id TEXT NOT NULL,
  root_session_id TEXT NOT NULL,
  run_id TEXT NOT NULL,
  tool_call_id TEXT,
  tool TEXT NOT NULL,
  title TEXT NOT NULL,
  scope TEXT,
  safe BIGINT NOT NULL DEFAULT 0,
  details TEXT,
  created_at BIGINT NOT NULL,
  expires_at BIGINT NOT NULL,
  decision TEXT,
  decided_by TEXT,
  message TEXT,
  decided_at BIGINT,
  closed_at BIGINT
);
CREATE INDEX permission_requests_open ON permission_requests (root_session_id) WHERE decision IS NULL;
CREATE INDEX permission_requests_call ON permission_requests (run_id, tool_call_id);
`;
