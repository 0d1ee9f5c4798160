/**
 * Aggregate reads of file history (`file_history`) for the read models: per-session change counts,
 * which tool changed which path, edits since a time. Read-only; ./file-history.ts owns the writes.
 * @module
 */
import type { Db } from '../store/db';

const marks = (values: readonly unknown[]) => values.map(() => '?').join(', ');

export interface FileChangeByTool {
  tool: string;
  path: string;
  change: string;
  n: number;
}

export interface SessionFileEdit {
  session_id: string;
  path: string;
  created_at: number;
}

/** The aggregate reads, async (a PostgreSQL twin: ./pg-file-history-queries.ts). */
export interface FileHistoryQueries {
  /** A session's change counts by kind, its distinct paths and the ten changed last. */
  sessionFileChanges(sessionId: string): Promise<SessionFileChanges>;
  /** Changes per tool, path and kind in these sessions (none for an empty list). */
  fileChangesByTool(sessionIds: readonly string[]): Promise<FileChangeByTool[]>;
  /** Edits made by sessions since a time (ms), oldest first. */
  fileEditsSince(since: number): Promise<SessionFileEdit[]>;
}

export function createFileHistoryQueries(db: () => Db): FileHistoryQueries {
  return {
    sessionFileChanges: async (sessionId) => sessionFileChanges(db(), sessionId),
    fileChangesByTool: async (sessionIds) => fileChangesByTool(db(), sessionIds),
    fileEditsSince: async (since) => fileEditsSince(db(), since),
  };
}

export interface SessionFileChanges {
  by_change: { change: string; n: number; paths: number }[];
  distinct_paths: number;
  /** The ten paths changed last, most recent first. */
  recent_paths: string[];
}

function sessionFileChanges(db: Db, sessionId: string): SessionFileChanges {
  const byChange = db
    .prepare(
      'SELECT change, count(*) AS n, count(DISTINCT path) AS paths FROM file_history WHERE session_id = ? GROUP BY change',
    )
    .all(sessionId) as SessionFileChanges['by_change'];
  const distinct = (
    db.prepare('SELECT count(DISTINCT path) AS n FROM file_history WHERE session_id = ?').get(sessionId) as {
      n: number;
    }
  ).n;
  const recent = (
    db
      .prepare(
        'SELECT path, max(id) AS last FROM file_history WHERE session_id = ? GROUP BY path ORDER BY last DESC LIMIT 10',
      )
      .all(sessionId) as { path: string }[]
  ).map((r) => r.path);
  return { by_change: byChange, distinct_paths: distinct, recent_paths: recent };
}

/** Changes per tool, path and kind in these sessions. */
function fileChangesByTool(
  db: Db,
  sessionIds: readonly string[],
): { tool: string; path: string; change: string; n: number }[] {
  if (!sessionIds.length) return [];
  return db
    .prepare(
      `SELECT tool, path, change, count(*) AS n FROM file_history
         WHERE session_id IN (${marks(sessionIds)}) GROUP BY tool, path, change`,
    )
    .all(...sessionIds) as { tool: string; path: string; change: string; n: number }[];
}

/** Edits made by sessions since a time (ms), oldest first. */
function fileEditsSince(db: Db, since: number): { session_id: string; path: string; created_at: number }[] {
  return db
    .prepare(
      'SELECT session_id, path, created_at FROM file_history WHERE session_id IS NOT NULL AND created_at >= ? ORDER BY id',
    )
    .all(since) as { session_id: string; path: string; created_at: number }[];
}
