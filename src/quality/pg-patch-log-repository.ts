/**
 * `apply_patch_log` on PostgreSQL (issue 18): the twin of ./patch-log-repository.ts, the same
 * answers: `files` stored as JSON text (read back as the text, as SQLite's `SELECT *` does), the
 * aggregates in SQLite's GROUP BY order (format, outcome, reason; bytewise, NULL first) so readouts
 * list reasons in the same order, the latest failures newest first.
 * @module
 */
import type { SqlClient } from '../store/postgres/client';
import {
  type AggregateRow,
  type FailureRow,
  type PatchLogRepository,
  patchLogValues,
} from './patch-log-repository';

const FAILURE_COLUMNS = `id, session_id, run_id, format, outcome, files, file_count, additions, deletions, fuzzy_hunks,
  error_code, reason, failed_path, failed_hunk, error_message, created_at`;

export function createPostgresPatchLogRepository(deps: { sql: SqlClient }): PatchLogRepository {
  const { sql } = deps;
  return {
    async insert(row) {
      const inserted = await sql.one<{ id: number }>(
        `INSERT INTO apply_patch_log (session_id, run_id, format, outcome, files, file_count, additions,
           deletions, fuzzy_hunks, error_code, reason, failed_path, failed_hunk, error_message, created_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15) RETURNING id`,
        patchLogValues(row),
      );
      return Number(inserted?.id);
    },
    aggregates: (sessionId) =>
      sql.query<AggregateRow & Record<string, unknown>>(
        `SELECT format, outcome, reason, count(*) AS n, sum(file_count) AS files, sum(fuzzy_hunks) AS fuzzy,
           max(created_at) AS last FROM apply_patch_log ${sessionId ? 'WHERE session_id = $1' : ''}
         GROUP BY format, outcome, reason
         ORDER BY format COLLATE "C", outcome COLLATE "C", reason COLLATE "C" NULLS FIRST`,
        sessionId ? [sessionId] : [],
      ),
    recentFailures: (sessionId, limit) =>
      sql.query<FailureRow & Record<string, unknown>>(
        `SELECT ${FAILURE_COLUMNS} FROM apply_patch_log WHERE outcome = 'failed' ${sessionId ? 'AND session_id = $2' : ''}
         ORDER BY id DESC LIMIT $1`,
        sessionId ? [limit, sessionId] : [limit],
      ),
  };
}
