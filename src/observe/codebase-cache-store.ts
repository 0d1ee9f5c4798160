/**
 * Persistence of the cached codebase summary (`codebase_context_cache`, one row per workspace).
 * ./codebase-context.ts decides when it is computed.
 * @module
 */
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
  return {
    async get(workspace) {
      return db()
        .prepare(
          'SELECT summary, computed_at, compute_ms, computations FROM codebase_context_cache WHERE workspace = ?',
        )
        .get(workspace) as CachedSummaryRow | undefined;
    },
    async put(workspace, entry) {
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
