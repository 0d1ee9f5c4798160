/**
 * The markers' table, `workspace_markers`: the only place that knows how markers are stored.
 * ./markers.ts owns the rules (scopes, expiry filtering).
 * @module
 */
import type { Db } from '../store/db';

export const MARKER_KINDS = ['note', 'todo', 'warning', 'handoff', 'in_progress'] as const;
export type MarkerKind = (typeof MARKER_KINDS)[number];

export interface Marker {
  id: string;
  session_id: string;
  path: string;
  kind: MarkerKind;
  message: string;
  created_at: number;
  expires_at: number | null;
}

/** Async (issue 18): the SQLite one answers at once; the PostgreSQL twin is ./pg-marker-repository.ts. */
export interface MarkerRepository {
  get(id: string): Promise<Marker | undefined>;
  insert(marker: Marker): Promise<void>;
  /** Markers that never expire or expire after `now`, newest first. */
  open(now: number): Promise<Marker[]>;
  delete(id: string): Promise<void>;
}

export function createMarkerRepository(db: () => Db): MarkerRepository {
  return {
    get: async (id) =>
      db().prepare('SELECT * FROM workspace_markers WHERE id = ?').get(id) as Marker | undefined,
    async insert(marker) {
      db()
        .prepare(
          'INSERT INTO workspace_markers (id, session_id, path, kind, message, created_at, expires_at) VALUES (?, ?, ?, ?, ?, ?, ?)',
        )
        .run(
          marker.id,
          marker.session_id,
          marker.path,
          marker.kind,
          marker.message,
          marker.created_at,
          marker.expires_at,
        );
    },
    open: async (now) =>
      db()
        .prepare(
          'SELECT * FROM workspace_markers WHERE expires_at IS NULL OR expires_at > ? ORDER BY created_at DESC',
        )
        .all(now) as Marker[],
    async delete(id) {
      db().prepare('DELETE FROM workspace_markers WHERE id = ?').run(id);
    },
  };
}
