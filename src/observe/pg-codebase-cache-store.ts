/**
 * `codebase_context_cache` on PostgreSQL (issue 18): the twin of ./codebase-cache-store.ts, the
 * same answers (one row per workspace, counting computations). The row is kept in memory while no
 * write to the table is notified (../store/postgres/table-changes.ts), as SQLite keeps it by
 * data_version: every run's prompt asks for it.
 * @module
 */
import type { SqlClient } from '../store/postgres/client';
import { memoByTableChanges, tableChanges } from '../store/postgres/table-changes';
import type { CachedSummaryRow, CodebaseCacheStore } from './codebase-cache-store';

export function createPostgresCodebaseCacheStore(deps: { sql: SqlClient }): CodebaseCacheStore {
  const { sql } = deps;
  const changes = tableChanges(sql);
  const rows = memoByTableChanges(changes, 'codebase_context_cache', (workspace: string) =>
    sql.one<CachedSummaryRow & Record<string, unknown>>(
      'SELECT summary, computed_at, compute_ms, computations FROM codebase_context_cache WHERE workspace = $1',
      [workspace],
    ),
  );
  return {
    async get(workspace) {
      const row = await rows.get(workspace);
      return row ? { ...row } : undefined;
    },
    async put(workspace, entry) {
      await changes.write('codebase_context_cache', () =>
        sql.run(
          `INSERT INTO codebase_context_cache (workspace, summary, computed_at, compute_ms, computations)
             VALUES ($1, $2, $3, $4, 1)
             ON CONFLICT (workspace) DO UPDATE SET summary = excluded.summary, computed_at = excluded.computed_at,
               compute_ms = excluded.compute_ms, computations = codebase_context_cache.computations + 1`,
          [workspace, entry.summary, entry.computed_at, entry.compute_ms],
        ),
      );
    },
  };
}
