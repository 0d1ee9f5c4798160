/**
 * Workspace markers: notes one session leaves on a path for the others (a handoff, a warning,
 * work in progress). Advisory only.
 * @module
 */
import type { App } from '../app';
import { SvcError } from '../errors';
import { normalizeScope, overlaps } from './paths';

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

export interface MarkerService {
  create(input: {
    session_id: string;
    path: string;
    kind: MarkerKind;
    message: string;
    ttl_seconds?: number;
  }): Marker;
  list(input?: { path?: string; session_id?: string }): Marker[];
  delete(input: { marker_id: string; session_id?: string }): Marker;
}

export function createMarkerService(app: App): MarkerService {
  const now = () => app.clock.now();
  const get = (id: string) => {
    const row = app.db.prepare('SELECT * FROM workspace_markers WHERE id = ?').get(id) as Marker | undefined;
    if (!row) throw new SvcError('not_found', `marker_id: no marker "${id}"; see leave_marker action list`);
    return row;
  };
  return {
    create(input) {
      if (!input.message.trim()) throw new SvcError('invalid_input', 'message: a marker needs a message');
      const id = app.ids.next('mrk');
      const t = now();
      app.db
        .prepare(
          'INSERT INTO workspace_markers (id, session_id, path, kind, message, created_at, expires_at) VALUES (?, ?, ?, ?, ?, ?, ?)',
        )
        .run(
          id,
          input.session_id,
          normalizeScope(app.workspace, input.path),
          input.kind,
          input.message,
          t,
          input.ttl_seconds ? t + input.ttl_seconds * 1000 : null,
        );
      return get(id);
    },
    list(input = {}) {
      const rows = app.db
        .prepare(
          'SELECT * FROM workspace_markers WHERE expires_at IS NULL OR expires_at > ? ORDER BY created_at DESC',
        )
        .all(now()) as Marker[];
      const scope = input.path ? normalizeScope(app.workspace, input.path) : undefined;
      return rows.filter(
        (m) =>
          (!scope || overlaps(m.path, scope)) && (!input.session_id || m.session_id === input.session_id),
      );
    },
    delete(input) {
      const marker = get(input.marker_id);
      app.db.prepare('DELETE FROM workspace_markers WHERE id = ?').run(marker.id);
      return marker;
    },
  };
}
