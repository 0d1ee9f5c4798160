/**
 * Reads of permission grants across sessions, for the enforcement readout. Read-only; the
 * permission service (./permission-service.ts) owns the grants and reads one session's.
 * @module
 */
import type { Db } from '../store/db';

export interface GrantRow {
  session_id: string;
  tool: string;
  scope: string;
  created_at: number;
}

export interface GrantQueries {
  /** Every session's grants, oldest first (then by tool). */
  all(): Promise<GrantRow[]>;
}

export function createGrantQueries(db: () => Db): GrantQueries {
  return {
    all: async () =>
      db()
        .prepare(
          'SELECT session_id, tool, scope, created_at FROM permission_grants ORDER BY created_at, tool',
        )
        .all() as GrantRow[],
  };
}
