/**
 * The SQL of the `workflow_runs` table: rows as stored (input and result as JSON text). The
 * store in `workflow-runs.ts` turns them into `WorkflowRun`s and reconciles a running row with
 * its ledger run.
 * @module
 */
import type { Db } from '../store/db';

export interface WorkflowRunRow {
  id: string;
  kind: string;
  name: string;
  ref: string | null;
  session_id: string;
  run_id: string;
  parent_run_id: string | null;
  status: string;
  input: string;
  result: string;
  error: string | null;
  created_at: number;
  updated_at: number;
  finished_at: number | null;
}

export interface WorkflowRunInsert {
  id: string;
  kind: string;
  name: string;
  ref: string | null;
  session_id: string;
  run_id: string;
  parent_run_id: string | null;
  /** JSON text. */
  input: string;
  now: number;
}

/** `workflow_runs` (issue 18: async; PostgreSQL twin ./pg-workflow-runs-repository.ts). */
export interface WorkflowRunRepository {
  insert(row: WorkflowRunInsert): Promise<void>;
  finish(
    id: string,
    outcome: { status: string; result: string; error: string | null; now: number },
  ): Promise<void>;
  get(id: string): Promise<WorkflowRunRow | undefined>;
  /** Newest first (created_at, then id, descending). */
  list(filter: { kind?: string; name?: string; ref?: string; limit: number }): Promise<WorkflowRunRow[]>;
}

export function createWorkflowRunRepository(db: () => Db): WorkflowRunRepository {
  return {
    async insert(row) {
      db()
        .prepare(
          `INSERT INTO workflow_runs (id, kind, name, ref, session_id, run_id, parent_run_id, status, input, created_at, updated_at)
           VALUES (?, ?, ?, ?, ?, ?, ?, 'running', ?, ?, ?)`,
        )
        .run(
          row.id,
          row.kind,
          row.name,
          row.ref,
          row.session_id,
          row.run_id,
          row.parent_run_id,
          row.input,
          row.now,
          row.now,
        );
    },
    async finish(id, outcome) {
      db()
        .prepare(
          'UPDATE workflow_runs SET status = ?, result = ?, error = ?, updated_at = ?, finished_at = ? WHERE id = ?',
        )
        .run(outcome.status, outcome.result, outcome.error, outcome.now, outcome.now, id);
    },
    async get(id) {
      return db().prepare('SELECT * FROM workflow_runs WHERE id = ?').get(id) as WorkflowRunRow | undefined;
    },
    async list(filter) {
      const where: string[] = [];
      const params: unknown[] = [];
      if (filter.kind) {
        where.push('kind = ?');
        params.push(filter.kind);
      }
      if (filter.name) {
        where.push('name = ?');
        params.push(filter.name);
      }
      if (filter.ref) {
        where.push('ref = ?');
        params.push(filter.ref);
      }
      return db()
        .prepare(
          `SELECT * FROM workflow_runs ${where.length ? `WHERE ${where.join(' AND ')}` : ''} ORDER BY created_at DESC, id DESC LIMIT ?`,
        )
        .all(...params, filter.limit) as WorkflowRunRow[];
    },
  };
}
