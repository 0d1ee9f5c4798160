/**
 * Read tracking: what each session last saw of each file. An edit or overwrite of an existing
 * file is refused when the session never read it, or when the file changed on disk since that
 * read (another session, the user's editor, a shell command), so the model never clobbers
 * content it has not seen. Content hashes, not mtimes, decide: mtime resolution is too coarse.
 * @module
 */
import type { Clock } from '../util/ids';
import type { FileReadRepository, FileReadRow } from './file-read-repository';

export type ReadRecord = FileReadRow;

export interface ReadTracker {
  record(
    sessionId: string,
    path: string,
    file: { sha256: string; size: number; mtimeMs: number },
  ): Promise<void>;
  get(sessionId: string, path: string): Promise<ReadRecord | undefined>;
  forgetSession(sessionId: string): Promise<void>;
}

export function createReadTracker(deps: { reads: FileReadRepository; clock: Clock }): ReadTracker {
  const repository = deps.reads;
  return {
    async record(sessionId, path, file) {
      await repository.upsert({
        session_id: sessionId,
        path,
        sha256: file.sha256,
        size: file.size,
        mtime_ms: file.mtimeMs,
        read_at: deps.clock.now(),
      });
    },
    get: (sessionId, path) => repository.get(sessionId, path),
    async forgetSession(sessionId) {
      await repository.deleteSession(sessionId);
    },
  };
}
