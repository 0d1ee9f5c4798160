/**
 * The processes svc started, on PostgreSQL (issue 18): the twin of ./process-repository.ts, the
 * same answers (oldest first by event id, payload parsed, an end matched by the same pid).
 * @module
 */
import type { SqlClient } from '../store/postgres/client';
import type { PendingProcess, ProcessRepository } from './process-repository';

export function createPostgresProcessRepository(deps: { sql: SqlClient }): ProcessRepository {
  const { sql } = deps;
  return {
    async pending(sinceMs, limit = 500) {
      const rows = await sql.query<{ run_id: string; session_id: string; payload: string }>(
        `SELECT e.run_id, e.session_id, e.payload FROM agent_run_events e
         WHERE e.type = 'process_started' AND e.created_at >= $1
           AND NOT EXISTS (
             SELECT 1 FROM agent_run_events x
             WHERE x.run_id = e.run_id AND x.type IN ('process_exited', 'process_reaped')
               AND (x.payload::jsonb -> 'pid') = (e.payload::jsonb -> 'pid'))
         ORDER BY e.id LIMIT $2`,
        [sinceMs, limit],
      );
      return rows.map(
        (row): PendingProcess => ({ ...row, payload: JSON.parse(row.payload) as Record<string, unknown> }),
      );
    },
  };
}
