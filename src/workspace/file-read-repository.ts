/**
 * The read records' table, `file_reads`: what each session last saw of each file. The only place
 * that knows how read records are stored; ./read-tracker.ts is the tracker built on it.
 * @module
 */
import type { Db } from '../store/db';

export interface FileReadRow {
  session_id: string;
  path: string;
  sha256: string;
  size: number;
  mtime_ms: number;
  read_at: number;
}

export interface FileReadRepository {
  /** Inserts or replaces the session's record of this path. */
  upsert(row: FileReadRow): Promise<void>;
  get(sessionId: string, path: string): Promise<FileReadRow | undefined>;
  deleteSession(sessionId: string): Promise<void>;
}

export function createFileReadRepository(db: () => Db): FileReadRepository {
  return {
    async upsert(row) {
      db()
        .prepare(
          `INSERT INTO file_reads (session_id, path, sha256, size, mtime_ms, read_at) VALUES (?, ?, ?, ?, ?, ?)
           ON CONFLICT (session_id, path) DO UPDATE SET sha256 = excluded.sha256, size = excluded.size,
             mtime_ms = excluded.mtime_ms, read_at = excluded.read_at`,
        )
        .run(row.session_id, row.path, row.sha256, row.size, row.mtime_ms, row.read_at);
    },
    get: async (sessionId, path) =>
      db().prepare('SELECT * FROM file_reads WHERE session_id = ? AND path = ?').get(sessionId, path) as
        | FileReadRow
        | undefined,
    async deleteSession(sessionId) {
      db().prepare('DELETE FROM file_reads WHERE session_id = ?').run(sessionId);
    },
  };
}
