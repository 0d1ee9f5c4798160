/**
 * Persistence of the cached codebase summary (`codebase_context_cache`, one row per workspace).
 * ./codebase-context.ts decides when it is computed.
 * @module
 */
import { memoByDataVersion } from '../store/data-version';
import type { Db } from '../store/db';

export interface CachedSummaryRow {
  /** The summary as stored (JSON text). */
  summary: string;
  computed_at: number;
  compute_ms: number;
  /** How many times it was computed. */
  computations: number;
}

export interface CodebaseCacheStore {
  get(workspace: string): Promise<CachedSummaryRow | undefined>;
  /** Stores a fresh computation (and counts it). */
  put(workspace: string, entry: { summary: string; computed_at: number; compute_ms: number }): Promise<void>;
}

export function createCodebaseCacheStore(db: () => Db): CodebaseCacheStore {
  // The row per workspace kept while no other connection committed and this store wrote nothing
  // (issue 17 item 3: every run's prompt asks for it).
  const rows = memoByDataVersion(
    db,
    (workspace: string) =>
      db()
        .prepare(
          'SELECT summary, computed_at, compute_ms, computations FROM codebase_context_cache WHERE workspace = ?',
        )
        .get(workspace) as CachedSummaryRow | undefined,
  );
  return {
    async get(workspace) {
      const row = rows.get(workspace);
      return row ? { ...row } : undefined;
    },
    async put(workspace, entry) {
      rows.invalidate();
      db()
        .prepare(
          `INSERT INTO codebase_context_cache (workspace, summary, computed_at, compute_ms, computations)
             VALUES (?, ?, ?, ?, 1)
             ON CONFLICT(workspace) DO UPDATE SET summary = excluded.summary, computed_at = excluded.computed_at,
               compute_ms = excluded.compute_ms, computations = computations + 1`,
        )
        .run(workspace, entry.summary, entry.computed_at, entry.compute_ms);
    },
  };
}
