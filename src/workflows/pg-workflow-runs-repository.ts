/**
 * `workflow_runs` on PostgreSQL (issue 18): the twin of ./workflow-runs-repository.ts, the same
 * answers (rows as stored, input and result as JSON text; lists newest first by created_at, then
 * id in byte order, descending).
 * @module
 */
import type { SqlClient } from '../store/postgres/client';
import type { WorkflowRunRepository, WorkflowRunRow } from './workflow-runs-repository';

type Row = WorkflowRunRow & { [column: string]: unknown };

const COLUMNS =
  'id, kind, name, ref, session_id, run_id, parent_run_id, status, input, result, error, created_at, updated_at, finished_at';

export function createPostgresWorkflowRunRepository(deps: { sql: SqlClient }): WorkflowRunRepository {
  const { sql } = deps;
  return {
    async insert(row) {
      await sql.run(
        `INSERT INTO workflow_runs (id, kind, name, ref, session_id, run_id, parent_run_id, status, input, created_at, updated_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, 'running', $8, $9, $9)`,
        [
          row.id,
          row.kind,
          row.name,
          row.ref,
          row.session_id,
          row.run_id,
          row.parent_run_id,
          row.input,
          row.now,
        ],
      );
    },
    async finish(id, outcome) {
      await sql.run(
        'UPDATE workflow_runs SET status = $1, result = $2, error = $3, updated_at = $4, finished_at = $4 WHERE id = $5',
        [outcome.status, outcome.result, outcome.error, outcome.now, id],
      );
    },
    get: async (id) => await sql.one<Row>(`SELECT ${COLUMNS} FROM workflow_runs WHERE id = $1`, [id]),
    async list(filter) {
      const where: string[] = [];
      const params: unknown[] = [];
      for (const column of ['kind', 'name', 'ref'] as const) {
        const value = filter[column];
        if (!value) continue;
        params.push(value);
        where.push(`${column} = $${params.length}`);
      }
      params.push(filter.limit);
      return await sql.query<Row>(
        `SELECT ${COLUMNS} FROM workflow_runs ${where.length ? `WHERE ${where.join(' AND ')}` : ''}
         ORDER BY created_at DESC, id COLLATE "C" DESC LIMIT $${params.length}`,
        params,
      );
    },
  };
}
