/**
 * Reads of workspace claims, negotiations and markers since a time on PostgreSQL (issue 18): the
 * same rows as ./trace-queries.ts (paths parsed from their JSON text), in creation order.
 * @module
 */
import type { SqlClient } from '../store/postgres/client';
import type { ClaimTraceRow, MarkerTraceRow, NegotiationTraceRow, TraceQueries } from './trace-queries';

type WithPathsText<T> = Omit<T, 'paths'> & { paths: string } & Record<string, unknown>;

export function createPostgresTraceQueries(deps: { sql: SqlClient }): TraceQueries {
  const { sql } = deps;
  return {
    async claimsSince(since) {
      const rows = await sql.query<WithPathsText<ClaimTraceRow>>(
        'SELECT * FROM workspace_claims WHERE created_at >= $1 ORDER BY created_at, id',
        [since],
      );
      return rows.map((row) => ({ ...row, paths: JSON.parse(row.paths) as string[] }));
    },
    async negotiationsSince(since) {
      const rows = await sql.query<WithPathsText<NegotiationTraceRow>>(
        `SELECT n.from_session_id, n.created_at, c.paths, c.mode FROM claim_negotiations n
           JOIN workspace_claims c ON c.id = n.claim_id WHERE n.created_at >= $1
          ORDER BY n.created_at, n.id`,
        [since],
      );
      return rows.map((row) => ({ ...row, paths: JSON.parse(row.paths) as string[] }));
    },
    async markersSince(since) {
      return await sql.query<MarkerTraceRow & Record<string, unknown>>(
        'SELECT session_id, path, created_at FROM workspace_markers WHERE created_at >= $1 ORDER BY created_at, id',
        [since],
      );
    },
  };
}
