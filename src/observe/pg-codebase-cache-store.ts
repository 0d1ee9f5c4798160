/**
 * `codebase_context_cache` on PostgreSQL (issue 18): the twin of ./codebase-cache-store.ts, the
 * same answers (one row per workspace, counting computations).
 * @module
 */
import type { SqlClient } from '../store/postgres/client';
import type { CachedSummaryRow, CodebaseCacheStore } from './codebase-cache-store';

export function createPostgresCodebaseCacheStore(deps: { sql: SqlClient }): CodebaseCacheStore {
  const { sql } = deps;
  return {
    get: (workspace) =>
      sql.one<CachedSummaryRow & Record<string, unknown>>(
        'SELECT summary, computed_at, compute_ms, computations FROM codebase_context_cache WHERE workspace = $1',
        [workspace],
      ),
    async put(workspace, entry) {
      await sql.run(
        `INSERT INTO codebase_context_cache (workspace, summary, computed_at, compute_ms, computations)
           VALUES ($1, $2, $3, $4, 1)
           ON CONFLICT (workspace) DO UPDATE SET summary = excluded.summary, computed_at = excluded.computed_at,
             compute_ms = excluded.compute_ms, computations = codebase_context_cache.computations + 1`,
        [workspace, entry.summary, entry.computed_at, entry.compute_ms],
      );
    },
  };
}
