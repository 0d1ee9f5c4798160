/**
 * Read tracking: what each session last saw of each file. An edit or overwrite of an existing
 * file is refused when the session never read it, or when the file changed on disk since that
 * read (another session, the user's editor, a shell command), so the model never clobbers
 * content it has not seen. Content hashes, not mtimes, decide: mtime resolution is too coarse.
 * @module
 */
import type { Db } from '../store/db';
import type { Clock } from '../util/ids';

export interface ReadRecord {
  session_id: string;
  path: string;
  sha256: string;
  size: number;
  mtime_ms: number;
  read_at: number;
}

export interface ReadTracker {
  record(sessionId: string, path: string, file: { sha256: string; size: number; mtimeMs: number }): void;
  get(sessionId: string, path: string): ReadRecord | undefined;
  forgetSession(sessionId: string): void;
}

export function createReadTracker(deps: { db: () => Db; clock: Clock }): ReadTracker {
  return {
    record(sessionId, path, file) {
      deps
        .db()
        .prepare(
          `INSERT INTO file_reads (session_id, path, sha256, size, mtime_ms, read_at) VALUES (?, ?, ?, ?, ?, ?)
           ON CONFLICT (session_id, path) DO UPDATE SET sha256 = excluded.sha256, size = excluded.size,
             mtime_ms = excluded.mtime_ms, read_at = excluded.read_at`,
        )
        .run(sessionId, path, file.sha256, file.size, file.mtimeMs, deps.clock.now());
    },
    get(sessionId, path) {
      return deps
        .db()
        .prepare('SELECT * FROM file_reads WHERE session_id = ? AND path = ?')
        .get(sessionId, path) as ReadRecord | undefined;
    },
    forgetSession(sessionId) {
      deps.db().prepare('DELETE FROM file_reads WHERE session_id = ?').run(sessionId);
    },
  };
}
