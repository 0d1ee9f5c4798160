/**
 * `file_history`'s aggregate reads on PostgreSQL (issue 18): the twin of ./file-history-queries.ts,
 * the same answers (counts as numbers, the ten paths changed last, most recent first; edits since
 * a time in id order).
 * @module
 */
import type { SqlClient } from '../store/postgres/client';
import type {
  FileChangeByTool,
  FileHistoryQueries,
  SessionFileChanges,
  SessionFileEdit,
} from './file-history-queries';

type ByChange = SessionFileChanges['by_change'][number] & Record<string, unknown>;

export function createPostgresFileHistoryQueries(deps: { sql: SqlClient }): FileHistoryQueries {
  const { sql } = deps;
  return {
    async sessionFileChanges(sessionId) {
      const byChange = await sql.query<ByChange>(
        'SELECT change, count(*)::int AS n, count(DISTINCT path)::int AS paths FROM file_history WHERE session_id = $1 GROUP BY change',
        [sessionId],
      );
      const distinct = await sql.one<{ n: number }>(
        'SELECT count(DISTINCT path)::int AS n FROM file_history WHERE session_id = $1',
        [sessionId],
      );
      const recent = await sql.query<{ path: string }>(
        'SELECT path, max(id) AS last FROM file_history WHERE session_id = $1 GROUP BY path ORDER BY last DESC LIMIT 10',
        [sessionId],
      );
      return {
        by_change: byChange.map((r) => ({ change: r.change, n: r.n, paths: r.paths })),
        distinct_paths: distinct?.n ?? 0,
        recent_paths: recent.map((r) => r.path),
      };
    },
    async fileChangesByTool(sessionIds) {
      if (!sessionIds.length) return [];
      return sql.query<FileChangeByTool & Record<string, unknown>>(
        `SELECT tool, path, change, count(*)::int AS n FROM file_history
           WHERE session_id = ANY($1::text[]) GROUP BY tool, path, change`,
        [[...sessionIds]],
      );
    },
    fileEditsSince: (since) =>
      sql.query<SessionFileEdit & Record<string, unknown>>(
        'SELECT session_id, path, created_at FROM file_history WHERE session_id IS NOT NULL AND created_at >= $1 ORDER BY id',
        [since],
      ),
  };
}
