/**
 * The apply_patch log (`apply_patch_log`): one row per attempt, applied or failed, for
 * `get_apply_patch_status`. Writes use the app database; reads answer empty without one.
 * @module
 */
import { type QualityDb, readOr } from './store';

export interface PatchLogRow {
  session_id: string | null;
  run_id: string | null;
  format: string;
  outcome: 'applied' | 'failed';
  files: unknown[];
  additions: number;
  deletions: number;
  fuzzy_hunks: number;
  error_code: string | null;
  reason: string | null;
  failed_path: string | null;
  failed_hunk: number | null;
  error_message: string | null;
  created_at: number;
}

export interface AggregateRow {
  format: string;
  outcome: 'applied' | 'failed';
  reason: string | null;
  n: number;
  files: number | null;
  fuzzy: number | null;
  last: number;
}

export interface FailureRow {
  id: number;
  session_id: string | null;
  run_id: string | null;
  format: string;
  error_code: string | null;
  reason: string | null;
  failed_path: string | null;
  failed_hunk: number | null;
  error_message: string | null;
  files: string;
  created_at: number;
}

/** The insert's parameters in column order (session_id … created_at), for both backends. */
export const patchLogValues = (row: PatchLogRow): unknown[] => [
  row.session_id,
  row.run_id,
  row.format,
  row.outcome,
  JSON.stringify(row.files),
  row.files.length,
  row.additions,
  row.deletions,
  row.fuzzy_hunks,
  row.error_code,
  row.reason,
  row.failed_path,
  row.failed_hunk,
  row.error_message,
  row.created_at,
];

export interface PatchLogRepository {
  /** Returns the attempt's id. */
  insert(row: PatchLogRow): Promise<number>;
  /** Attempts per format, outcome and reason. */
  aggregates(sessionId?: string): Promise<AggregateRow[]>;
  /** The latest failed attempts, newest first. */
  recentFailures(sessionId: string | undefined, limit: number): Promise<FailureRow[]>;
}

export function createPatchLogRepository(qdb: QualityDb): PatchLogRepository {
  return {
    async insert(row) {
      const info = qdb
        .write()
        .prepare(
          `INSERT INTO apply_patch_log (session_id, run_id, format, outcome, files, file_count, additions,
             deletions, fuzzy_hunks, error_code, reason, failed_path, failed_hunk, error_message, created_at)
           VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
        )
        .run(...patchLogValues(row));
      return Number(info.lastInsertRowid);
    },
    async aggregates(sessionId) {
      const where = sessionId ? 'WHERE session_id = ?' : '';
      const params = sessionId ? [sessionId] : [];
      return readOr(
        qdb,
        [] as AggregateRow[],
        (db) =>
          db
            .prepare(
              `SELECT format, outcome, reason, count(*) AS n, sum(file_count) AS files, sum(fuzzy_hunks) AS fuzzy,
               max(created_at) AS last FROM apply_patch_log ${where} GROUP BY format, outcome, reason`,
            )
            .all(...params) as AggregateRow[],
      );
    },
    async recentFailures(sessionId, limit) {
      const params = sessionId ? [sessionId] : [];
      return readOr(
        qdb,
        [] as FailureRow[],
        (db) =>
          db
            .prepare(
              `SELECT * FROM apply_patch_log WHERE outcome = 'failed' ${sessionId ? 'AND session_id = ?' : ''}
             ORDER BY id DESC LIMIT ?`,
            )
            .all(...params, limit) as FailureRow[],
      );
    },
  };
}
