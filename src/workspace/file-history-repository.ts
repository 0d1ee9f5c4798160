/**
 * The file history's table, `file_history`: the writes and the per-change reads. The only place,
 * with the aggregate reads of ./file-history-queries.ts, that knows how changes are stored;
 * ./file-history.ts owns what is kept (size limits, hashes) and the diffs.
 * @module
 */
import type { Db } from '../store/db';

export type FileChangeKind = 'create' | 'modify' | 'delete';

export interface FileHistoryRow {
  id: number;
  session_id: string | null;
  run_id: string | null;
  tool: string;
  path: string;
  change: FileChangeKind;
  before_text: string | null;
  after_text: string | null;
  before_sha: string | null;
  after_sha: string | null;
  before_size: number | null;
  after_size: number | null;
  binary: number;
  created_at: number;
}

export interface FileHistoryFilter {
  sessionId?: string;
  runId?: string;
  path?: string;
  limit?: number;
}

/** The insert's parameters in column order (session_id … created_at), for both backends. */
export const fileHistoryValues = (row: Omit<FileHistoryRow, 'id'>): unknown[] => [
  row.session_id,
  row.run_id,
  row.tool,
  row.path,
  row.change,
  row.before_text,
  row.after_text,
  row.before_sha,
  row.after_sha,
  row.before_size,
  row.after_size,
  row.binary,
  row.created_at,
];

export interface FileHistoryRepository {
  /** Inserts a change and returns its id. */
  insert(row: Omit<FileHistoryRow, 'id'>): Promise<number>;
  get(id: number): Promise<FileHistoryRow | undefined>;
  /** The last `limit` (default 1000) matching changes, oldest first. */
  list(filter: FileHistoryFilter): Promise<FileHistoryRow[]>;
}

export function createFileHistoryRepository(db: () => Db): FileHistoryRepository {
  return {
    async insert(row) {
      const info = db()
        .prepare(
          `INSERT INTO file_history (session_id, run_id, tool, path, change, before_text, after_text,
             before_sha, after_sha, before_size, after_size, binary, created_at)
           VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
        )
        .run(...fileHistoryValues(row));
      return Number(info.lastInsertRowid);
    },
    get: async (id) =>
      db().prepare('SELECT * FROM file_history WHERE id = ?').get(id) as FileHistoryRow | undefined,
    async list(filter) {
      const where: string[] = [];
      const params: unknown[] = [];
      if (filter.sessionId) {
        where.push('session_id = ?');
        params.push(filter.sessionId);
      }
      if (filter.runId) {
        where.push('run_id = ?');
        params.push(filter.runId);
      }
      if (filter.path) {
        where.push('path = ?');
        params.push(filter.path);
      }
      const sql = `SELECT * FROM (SELECT * FROM file_history ${where.length ? `WHERE ${where.join(' AND ')}` : ''}
        ORDER BY id DESC LIMIT ?) ORDER BY id`;
      params.push(filter.limit ?? 1000);
      return db()
        .prepare(sql)
        .all(...params) as FileHistoryRow[];
    },
  };
}
