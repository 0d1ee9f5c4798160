/**
 * `permission_requests` on PostgreSQL (issue 19, item 4; PostgreSQL migration 21): see
 * ./permission-request-repository.ts.
 * @module
 */
import type { SqlClient } from '../store/postgres/client';
import type { PermissionRequestRepository, StoredPermissionRequest } from './permission-request-repository';
import type { PermissionDecision } from './permission-types';

const COLUMNS =
  'request_id, session_id, root_session_id, run_id, tool_call_id, tool, title, scope, safe, details, created_at, expires_at, decision, decided_by, message, decided_at, closed_at';

type Row = Omit<StoredPermissionRequest, 'details' | 'safe'> & {
  details: string | null;
  safe: number | string;
} & Record<string, unknown>;

export function createPostgresPermissionRequestRepository(deps: {
  sql: SqlClient;
}): PermissionRequestRepository {
  const { sql } = deps;
  const one = async (text: string, params: unknown[]) => {
    const row = await sql.one<Row>(text, params);
    return row ? toRequest(row) : undefined;
  };
  return {
    async insert(r) {
      await sql.run(
        `INSERT INTO permission_requests (request_id, session_id, root_session_id, run_id, tool_call_id, tool, title, scope, safe, details, created_at, expires_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12) ON CONFLICT (request_id) DO NOTHING`,
        [
          r.request_id,
          r.session_id,
          r.root_session_id,
          r.run_id,
          r.tool_call_id,
          r.tool,
          r.title,
          r.scope,
          r.safe ? 1 : 0,
          r.details ? JSON.stringify(r.details) : null,
          r.created_at,
          r.expires_at,
        ],
      );
    },
    get: (requestId) => one(`SELECT ${COLUMNS} FROM permission_requests WHERE request_id = $1`, [requestId]),
    ofCall: (runId, toolCallId) =>
      one(
        `SELECT ${COLUMNS} FROM permission_requests WHERE run_id = $1 AND tool_call_id = $2 AND closed_at IS NULL
         ORDER BY created_at DESC LIMIT 1`,
        [runId, toolCallId],
      ),
    async open() {
      const rows = await sql.query<Row>(
        `SELECT ${COLUMNS} FROM permission_requests WHERE decision IS NULL ORDER BY created_at, request_id`,
      );
      return rows.map(toRequest);
    },
    decide: (requestId, answer) =>
      one(
        `UPDATE permission_requests SET decision = $2, decided_by = $3, message = $4, decided_at = $5
         WHERE request_id = $1 AND decision IS NULL RETURNING ${COLUMNS}`,
        [requestId, answer.decision, answer.by, answer.message, answer.at],
      ),
    async undecide(requestId) {
      await sql.run(
        'UPDATE permission_requests SET decision = NULL, decided_by = NULL, message = NULL, decided_at = NULL WHERE request_id = $1 AND closed_at IS NULL',
        [requestId],
      );
    },
    async close(requestId, at) {
      await sql.run(
        'UPDATE permission_requests SET closed_at = $2 WHERE request_id = $1 AND closed_at IS NULL',
        [requestId, at],
      );
    },
    async waitingCalls(runId) {
      const rows = await sql.query<{ tool_call_id: string }>(
        // A call with a request its run took already may have acted since: not waiting.
        `SELECT tool_call_id FROM permission_requests WHERE run_id = $1 AND tool_call_id IS NOT NULL
         GROUP BY tool_call_id HAVING bool_and(closed_at IS NULL) ORDER BY tool_call_id`,
        [runId],
      );
      return rows.map((row) => row.tool_call_id);
    },
  };
}

function toRequest(row: Row): StoredPermissionRequest {
  return {
    request_id: row.request_id,
    session_id: row.session_id,
    root_session_id: row.root_session_id,
    run_id: row.run_id,
    tool_call_id: row.tool_call_id ?? null,
    tool: row.tool,
    title: row.title,
    scope: row.scope ?? null,
    safe: Number(row.safe) === 1,
    details: row.details ? (JSON.parse(row.details) as Record<string, unknown>) : null,
    created_at: Number(row.created_at),
    expires_at: Number(row.expires_at),
    decision: (row.decision as PermissionDecision | null) ?? null,
    decided_by: row.decided_by ?? null,
    message: row.message ?? null,
    decided_at: row.decided_at === null ? null : Number(row.decided_at),
    closed_at: row.closed_at === null ? null : Number(row.closed_at),
  };
}
