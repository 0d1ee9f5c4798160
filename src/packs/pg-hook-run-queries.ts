/**
 * Reads of pack hook runs on PostgreSQL (issue 18): the same answers as ./hook-run-queries.ts
 * (newest first; an empty session list matches none).
 * @module
 */
import type { SqlClient } from '../store/postgres/client';
import type { FailedHookRun, HookRunQueries } from './hook-run-queries';

export function createPostgresHookRunQueries(deps: { sql: SqlClient }): HookRunQueries {
  const { sql } = deps;
  return {
    async failed(filter) {
      const params: unknown[] = [filter.since];
      const sessions = filter.sessionIds
        ? ` AND session_id = ANY($${params.push([...filter.sessionIds])}::text[])`
        : '';
      return await sql.query<FailedHookRun & Record<string, unknown>>(
        `SELECT session_id, pack_name, hook_index, event, status, started_at FROM pack_hook_runs
          WHERE status <> 'ok' AND started_at >= $1${sessions}
          ORDER BY id DESC`,
        params,
      );
    },
  };
}
