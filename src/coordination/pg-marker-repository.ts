/**
 * `workspace_markers` on PostgreSQL (issue 18): the twin of ./marker-repository.ts, the same
 * answers (open markers newest first, a missing id undefined, `expires_at` null for a marker that
 * never expires).
 * @module
 */
import type { SqlClient } from '../store/postgres/client';
import type { Marker, MarkerRepository } from './marker-repository';

type Row = Marker & Record<string, unknown>;

export function createPostgresMarkerRepository(deps: { sql: SqlClient }): MarkerRepository {
  const { sql } = deps;
  return {
    get: (id) => sql.one<Row>('SELECT * FROM workspace_markers WHERE id = $1', [id]),
    async insert(marker) {
      await sql.run(
        'INSERT INTO workspace_markers (id, session_id, path, kind, message, created_at, expires_at) VALUES ($1, $2, $3, $4, $5, $6, $7)',
        [
          marker.id,
          marker.session_id,
          marker.path,
          marker.kind,
          marker.message,
          marker.created_at,
          marker.expires_at,
        ],
      );
    },
    open: (now) =>
      sql.query<Row>(
        'SELECT * FROM workspace_markers WHERE expires_at IS NULL OR expires_at > $1 ORDER BY created_at DESC, id DESC',
        [now],
      ),
    async delete(id) {
      await sql.run('DELETE FROM workspace_markers WHERE id = $1', [id]);
    },
  };
}
