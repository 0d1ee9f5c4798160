/**
 * The alerts' read of `pack_hook_runs` on PostgreSQL (issue 18): the twin of
 * ./hook-run-queries.ts, the same answers: the runs that did not end ok since a time, newest
 * first, of the given sessions (an empty list matches none) or of all.
 * @module
 */
import type { SqlClient } from '../store/postgres/client';
import type { FailedHookRun, HookRunQueries } from './hook-run-queries';

export function createPostgresHookRunQueries(deps: { sql: SqlClient }): HookRunQueries {
  const { sql } = deps;
  return {
    async failed(filter) {
      const sessions = filter.sessionIds;
      if (sessions && sessions.length === 0) return [];
      return sql.query<FailedHookRun & Record<string, unknown>>(
        `SELECT session_id, pack_name, hook_index, event, status, started_at FROM pack_hook_runs
         WHERE status != 'ok' AND started_at >= $1 ${sessions ? 'AND session_id = ANY($2)' : ''}
         ORDER BY id DESC`,
        sessions ? [filter.since, [...sessions]] : [filter.since],
      );
    },
  };
}
