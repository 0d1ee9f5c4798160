/**
 * Reads of workspace claims, claim negotiations and markers since a time, for the multiplayer
 * trace export (src/readouts/multiplayer/export.ts). Read-only; ./claims.ts and ./markers.ts own
 * the writes. Async (issue 18): `TraceQueries`, with its PostgreSQL twin in ./pg-trace-queries.ts.
 * @module
 */
import type { Db } from '../store/db';

export interface ClaimTraceRow {
  id: string;
  session_id: string;
  paths: string[];
  mode: 'soft' | 'hard';
  created_at: number;
  released_at: number | null;
}

export interface NegotiationTraceRow {
  from_session_id: string;
  created_at: number;
  paths: string[];
  mode: 'soft' | 'hard';
}

export interface MarkerTraceRow {
  session_id: string;
  path: string;
  created_at: number;
}

export interface TraceQueries {
  /** Claims created at or after `since` (ms). */
  claimsSince(since: number): Promise<ClaimTraceRow[]>;
  /** Negotiations created at or after `since`, with their claim's paths and mode. */
  negotiationsSince(since: number): Promise<NegotiationTraceRow[]>;
  /** Markers created at or after `since`. */
  markersSince(since: number): Promise<MarkerTraceRow[]>;
}

export function createTraceQueries(db: () => Db): TraceQueries {
  return {
    claimsSince: async (since) => claimsSince(db(), since),
    negotiationsSince: async (since) => negotiationsSince(db(), since),
    markersSince: async (since) => markersSince(db(), since),
  };
}

function claimsSince(db: Db, since: number): ClaimTraceRow[] {
  const rows = db.prepare('SELECT * FROM workspace_claims WHERE created_at >= ?').all(since) as (Omit<
    ClaimTraceRow,
    'paths'
  > & { paths: string })[];
  return rows.map((row) => ({ ...row, paths: JSON.parse(row.paths) as string[] }));
}

function negotiationsSince(db: Db, since: number): NegotiationTraceRow[] {
  const rows = db
    .prepare(
      'SELECT n.from_session_id, n.created_at, c.paths, c.mode FROM claim_negotiations n JOIN workspace_claims c ON c.id = n.claim_id WHERE n.created_at >= ?',
    )
    .all(since) as { from_session_id: string; created_at: number; paths: string; mode: 'soft' | 'hard' }[];
  return rows.map((row) => ({ ...row, paths: JSON.parse(row.paths) as string[] }));
}

function markersSince(db: Db, since: number): MarkerTraceRow[] {
  return db
    .prepare('SELECT session_id, path, created_at FROM workspace_markers WHERE created_at >= ?')
    .all(since) as MarkerTraceRow[];
}
