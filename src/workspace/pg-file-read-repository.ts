/**
 * `file_reads` on PostgreSQL (issue 18): the twin of ./file-read-repository.ts. One row per
 * session and path; an upsert replaces the record (the primary key decides, not a read first).
 * @module
 */
import type { SqlClient } from '../store/postgres/client';
import type { FileReadRepository, FileReadRow } from './file-read-repository';

export function createPostgresFileReadRepository(deps: { sql: SqlClient }): FileReadRepository {
  const { sql } = deps;
  return {
    async upsert(row) {
      await sql.run(
        `INSERT INTO file_reads (session_id, path, sha256, size, mtime_ms, read_at) VALUES ($1, $2, $3, $4, $5, $6)
         ON CONFLICT (session_id, path) DO UPDATE SET sha256 = excluded.sha256, size = excluded.size,
           mtime_ms = excluded.mtime_ms, read_at = excluded.read_at`,
        [row.session_id, row.path, row.sha256, row.size, row.mtime_ms, row.read_at],
      );
    },
    get: (sessionId, path) =>
      sql.one<FileReadRow & Record<string, unknown>>(
        'SELECT session_id, path, sha256, size, mtime_ms, read_at FROM file_reads WHERE session_id = $1 AND path = $2',
        [sessionId, path],
      ),
    async deleteSession(sessionId) {
      await sql.run('DELETE FROM file_reads WHERE session_id = $1', [sessionId]);
    },
  };
}
