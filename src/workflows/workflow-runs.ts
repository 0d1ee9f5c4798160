/**
 * The `workflow_runs` table: one row per pipeline (recipe, DAG, workflow template, CSV fan-out,
 * team task) with its input and, once it ends, its structured result. The row's status follows
 * its ledger run: a pipeline whose process died reads as the ledger marked it (interrupted).
 * @module
 */
import type { Db } from '../store/db';
import type { Clock, Ids } from '../util/ids';

export type WorkflowKind = 'recipe' | 'dag' | 'workflow' | 'csv' | 'team';
export type WorkflowStatus = 'running' | 'completed' | 'failed' | 'cancelled' | 'interrupted';

export interface WorkflowRun {
  id: string;
  kind: WorkflowKind;
  name: string;
  /** What it belongs to: a team id, a template name. */
  ref: string | null;
  session_id: string;
  run_id: string;
  parent_run_id: string | null;
  status: WorkflowStatus;
  input: Record<string, unknown>;
  result: Record<string, unknown>;
  error: string | null;
  created_at: number;
  updated_at: number;
  finished_at: number | null;
}

interface Row extends Omit<WorkflowRun, 'input' | 'result'> {
  input: string;
  result: string;
}

export interface WorkflowRunStore {
  create(input: {
    kind: WorkflowKind;
    name: string;
    ref?: string | null;
    session_id: string;
    run_id: string;
    parent_run_id: string | null;
    input: Record<string, unknown>;
  }): WorkflowRun;
  finish(
    id: string,
    outcome: { status: WorkflowStatus; result: Record<string, unknown>; error: string | null },
  ): void;
  get(id: string): WorkflowRun | undefined;
  list(filter: { kind?: WorkflowKind; name?: string; ref?: string; limit?: number }): WorkflowRun[];
}

export function createWorkflowRunStore(deps: {
  db: () => Db;
  clock: Clock;
  ids: Ids;
  /** The ledger status of a run (a dead process's pipeline reads as interrupted). */
  runStatus: (runId: string) => string | undefined;
}): WorkflowRunStore {
  const toRun = (row: Row): WorkflowRun => {
    const run: WorkflowRun = { ...row, input: JSON.parse(row.input), result: JSON.parse(row.result) };
    if (run.status === 'running') {
      const ledger = deps.runStatus(run.run_id);
      if (ledger && ledger !== 'running' && ledger !== 'queued') run.status = ledger as WorkflowStatus;
    }
    return run;
  };
  return {
    create(input) {
      const now = deps.clock.now();
      const id = deps.ids.next('wfr');
      deps
        .db()
        .prepare(
          `INSERT INTO workflow_runs (id, kind, name, ref, session_id, run_id, parent_run_id, status, input, created_at, updated_at)
           VALUES (?, ?, ?, ?, ?, ?, ?, 'running', ?, ?, ?)`,
        )
        .run(
          id,
          input.kind,
          input.name,
          input.ref ?? null,
          input.session_id,
          input.run_id,
          input.parent_run_id,
          JSON.stringify(input.input),
          now,
          now,
        );
      return this.get(id)!;
    },
    finish(id, outcome) {
      const now = deps.clock.now();
      deps
        .db()
        .prepare(
          'UPDATE workflow_runs SET status = ?, result = ?, error = ?, updated_at = ?, finished_at = ? WHERE id = ?',
        )
        .run(outcome.status, JSON.stringify(outcome.result), outcome.error, now, now, id);
    },
    get(id) {
      const row = deps.db().prepare('SELECT * FROM workflow_runs WHERE id = ?').get(id) as Row | undefined;
      return row ? toRun(row) : undefined;
    },
    list(filter) {
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
      const rows = deps
        .db()
        .prepare(
          `SELECT * FROM workflow_runs ${where.length ? `WHERE ${where.join(' AND ')}` : ''} ORDER BY created_at DESC, id DESC LIMIT ?`,
        )
        .all(...params, filter.limit ?? 20) as Row[];
      return rows.map(toRun);
    },
  };
}
