/**
 * `permission_grants` on PostgreSQL (issue 18): the twins of ./grant-repository.ts and
 * ./grant-queries.ts, the same answers (a grant for `*` covers every scope; an existing grant is
 * kept as it was, decided by the primary key; lists oldest first, then by tool).
 * @module
 */
import type { SqlClient } from '../store/postgres/client';
import type { GrantQueries, GrantRow } from './grant-queries';
import { ANY_SCOPE, type GrantRepository, type StoredGrant } from './grant-repository';

export function createPostgresGrantRepository(deps: { sql: SqlClient }): GrantRepository {
  const { sql } = deps;
  return {
    async has(root, tool, scope) {
      const row = await sql.one(
        'SELECT 1 AS held FROM permission_grants WHERE session_id = $1 AND tool = $2 AND scope IN ($3, $4) LIMIT 1',
        [root, tool, scope ?? ANY_SCOPE, ANY_SCOPE],
      );
      return row !== undefined;
    },
    async add(root, tool, scope, createdAt) {
      await sql.run(
        'INSERT INTO permission_grants (session_id, tool, scope, created_at) VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING',
        [root, tool, scope, createdAt],
      );
    },
    list: (root) =>
      sql.query<StoredGrant & Record<string, unknown>>(
        'SELECT session_id, tool, scope, created_at FROM permission_grants WHERE session_id = $1 ORDER BY created_at, tool',
        [root],
      ),
    revoke: (root) => sql.run('DELETE FROM permission_grants WHERE session_id = $1', [root]),
  };
}

export function createPostgresGrantQueries(deps: { sql: SqlClient }): GrantQueries {
  return {
    all: () =>
      deps.sql.query<GrantRow & Record<string, unknown>>(
        'SELECT session_id, tool, scope, created_at FROM permission_grants ORDER BY created_at, tool',
      ),
  };
}
