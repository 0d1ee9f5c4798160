/**
 * The `workflow_runs` table: one row per pipeline (recipe, DAG, workflow template, CSV fan-out,
 * team task) with its input and, once it ends, its structured result. The row's status follows
 * its ledger run: a pipeline whose process died reads as the ledger marked it (interrupted).
 * @module
 */
import type { Clock, Ids } from '../util/ids';
import type { WorkflowRunRepository, WorkflowRunRow } from './workflow-runs-repository';

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

export interface WorkflowRunStore {
  create(input: {
    kind: WorkflowKind;
    name: string;
    ref?: string | null;
    session_id: string;
    run_id: string;
    parent_run_id: string | null;
    input: Record<string, unknown>;
  }): Promise<WorkflowRun>;
  finish(
    id: string,
    outcome: { status: WorkflowStatus; result: Record<string, unknown>; error: string | null },
  ): Promise<void>;
  get(id: string): Promise<WorkflowRun | undefined>;
  list(filter: { kind?: WorkflowKind; name?: string; ref?: string; limit?: number }): Promise<WorkflowRun[]>;
}

export function createWorkflowRunStore(deps: {
  /** `workflow_runs` (SQLite or PostgreSQL). */
  repo: WorkflowRunRepository;
  clock: Clock;
  ids: Ids;
  /** The ledger status of a run (a dead process's pipeline reads as interrupted). */
  runStatus: (runId: string) => Promise<string | undefined>;
}): WorkflowRunStore {
  const { repo } = deps;
  const toRun = async (row: WorkflowRunRow): Promise<WorkflowRun> => {
    const run: WorkflowRun = {
      ...row,
      kind: row.kind as WorkflowKind,
      status: row.status as WorkflowStatus,
      input: JSON.parse(row.input),
      result: JSON.parse(row.result),
    };
    if (run.status === 'running') {
      const ledger = await deps.runStatus(run.run_id);
      if (ledger && ledger !== 'running' && ledger !== 'queued') run.status = ledger as WorkflowStatus;
    }
    return run;
  };
  return {
    async create(input) {
      const now = deps.clock.now();
      const id = deps.ids.next('wfr');
      await repo.insert({
        id,
        kind: input.kind,
        name: input.name,
        ref: input.ref ?? null,
        session_id: input.session_id,
        run_id: input.run_id,
        parent_run_id: input.parent_run_id,
        input: JSON.stringify(input.input),
        now,
      });
      return (await this.get(id))!;
    },
    async finish(id, outcome) {
      await repo.finish(id, {
        status: outcome.status,
        result: JSON.stringify(outcome.result),
        error: outcome.error,
        now: deps.clock.now(),
      });
    },
    async get(id) {
      const row = await repo.get(id);
      return row ? await toRun(row) : undefined;
    },
    async list(filter) {
      return Promise.all((await repo.list({ ...filter, limit: filter.limit ?? 20 })).map(toRun));
    },
  };
}
