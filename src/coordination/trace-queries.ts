/**
 * Reads of workspace claims, claim negotiations and markers since a time, for the multiplayer
 * trace export (src/readouts/multiplayer/export.ts). Read-only; ./claims.ts and ./markers.ts own
 * the writes.
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

export function claimsSince(db: Db, since: number): ClaimTraceRow[] {
  const rows = db.prepare('SELECT * FROM workspace_claims WHERE created_at >= ?').all(since) as (Omit<
    ClaimTraceRow,
    'paths'
  > & { paths: string })[];
  return rows.map((row) => ({ ...row, paths: JSON.parse(row.paths) as string[] }));
}

export function negotiationsSince(
  db: Db,
  since: number,
): { from_session_id: string; created_at: number; paths: string[]; mode: 'soft' | 'hard' }[] {
  const rows = db
    .prepare(
      'SELECT n.from_session_id, n.created_at, c.paths, c.mode FROM claim_negotiations n JOIN workspace_claims c ON c.id = n.claim_id WHERE n.created_at >= ?',
    )
    .all(since) as { from_session_id: string; created_at: number; paths: string; mode: 'soft' | 'hard' }[];
  return rows.map((row) => ({ ...row, paths: JSON.parse(row.paths) as string[] }));
}

export function markersSince(
  db: Db,
  since: number,
): { session_id: string; path: string; created_at: number }[] {
  return db
    .prepare('SELECT session_id, path, created_at FROM workspace_markers WHERE created_at >= ?')
    .all(since) as { session_id: string; path: string; created_at: number }[];
}
