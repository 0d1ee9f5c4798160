/**
 * `file_history` on PostgreSQL (issue 18): the twin of ./file-history-repository.ts, the same
 * rows (ids from an identity, `binary` 0/1; the column is quoted, a reserved word here) and the
 * same list: the last `limit` matching changes, oldest first.
 * @module
 */
import type { SqlClient } from '../store/postgres/client';
import {
  type FileHistoryRepository,
  type FileHistoryRow,
  fileHistoryValues,
} from './file-history-repository';

const COLUMNS = `id, session_id, run_id, tool, path, change, before_text, after_text, before_sha, after_sha,
  before_size, after_size, "binary", created_at`;

type Row = FileHistoryRow & Record<string, unknown>;

export function createPostgresFileHistoryRepository(deps: { sql: SqlClient }): FileHistoryRepository {
  const { sql } = deps;
  return {
    async insert(row) {
      const inserted = await sql.one<{ id: number }>(
        `INSERT INTO file_history (session_id, run_id, tool, path, change, before_text, after_text,
           before_sha, after_sha, before_size, after_size, "binary", created_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13) RETURNING id`,
        fileHistoryValues(row),
      );
      return Number(inserted?.id);
    },
    get: (id) => sql.one<Row>(`SELECT ${COLUMNS} FROM file_history WHERE id = $1`, [id]),
    list(filter) {
      const where: string[] = [];
      const params: unknown[] = [];
      const add = (column: string, value: string | undefined) => {
        if (!value) return;
        params.push(value);
        where.push(`${column} = $${params.length}`);
      };
      add('session_id', filter.sessionId);
      add('run_id', filter.runId);
      add('path', filter.path);
      params.push(filter.limit ?? 1000);
      return sql.query<Row>(
        `SELECT * FROM (SELECT ${COLUMNS} FROM file_history ${where.length ? `WHERE ${where.join(' AND ')}` : ''}
           ORDER BY id DESC LIMIT $${params.length}) AS last ORDER BY id`,
        params,
      );
    },
  };
}
