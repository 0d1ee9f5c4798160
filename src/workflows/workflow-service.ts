/**
 * The workflows domain (`app.workflows`): the pipeline frame every multi-step workflow runs in,
 * the stores behind teams, workflow templates and worktree overrides, and the bookkeeping that
 * stops running pipelines when svc shuts down (their runs end `interrupted`).
 * @module
 */
import { SvcError } from '../errors';
import type { RunLedger } from '../runs/run-ledger';
import type { Ids } from '../util/ids';
import type { WorkspaceStores } from '../workspace/stores';
import type { Caller } from './lineage';
import {
  type Pipeline,
  type PipelineDeps,
  type PipelineEntry,
  type PipelineRegistry,
  type PipelineSpec,
  startPipeline,
} from './pipeline';
import type { WorkflowStores } from './stores';
import type { TeamStore } from './team-store';
import type { TemplateStore } from './template-store';
import { createWorkflowRunStore, type WorkflowRunStore } from './workflow-runs';
import type { WorktreeStore } from './worktree-store';

const CLOSE_TIMEOUT_MS = 5000;

export interface WorkflowService {
  readonly runs: WorkflowRunStore;
  readonly teams: TeamStore;
  readonly templates: TemplateStore;
  readonly worktrees: WorktreeStore;
  /** The workspace repositories a worktree override's own workspace records in. */
  readonly worktreeWorkspace: WorkspaceStores;
  /** Open a pipeline (its session, its ledger run, its workflow_runs row) for the caller. */
  start(caller: Caller, spec: PipelineSpec): Promise<Pipeline>;
  /** Pipelines running in this process. */
  active(): number;
  /**
   * svc is shutting down: running pipelines start no more steps (they end `interrupted` once the
   * agent has stopped their running steps) and new ones are refused. Called before the agent
   * service closes.
   */
  quiesce(): void;
  /** Wait (bounded) for running pipelines to record their end; abort the stragglers. */
  close(): Promise<void>;
}

/**
 * What the workflows domain needs: the repositories of its tables, the session and run ledgers its
 * pipelines record in, the agent that runs their steps (a thunk: the agent is wired first) and
 * the tool catalog that narrows a step's tools.
 */
export interface WorkflowDeps extends Omit<PipelineDeps, 'store' | 'registry' | 'runs'> {
  /** The repositories (SQLite: createSqliteWorkflowStores, PostgreSQL: createPostgresWorkflowStores). */
  readonly stores: WorkflowStores;
  readonly ids: Ids;
  readonly runs: PipelineDeps['runs'] & Pick<RunLedger, 'get' | 'queries'>;
}

export function createWorkflowService(deps: WorkflowDeps): WorkflowService {
  const runs = createWorkflowRunStore({
    repo: deps.stores.runs,
    clock: deps.clock,
    ids: deps.ids,
    runStatus: async (runId) => (await deps.runs.queries.get(runId))?.status,
  });
  const running = new Set<PipelineEntry>();
  let closing = false;
  const reason = 'svc shut down while the workflow was running';
  const registry: PipelineRegistry = {
    assertOpen() {
      if (closing) throw new SvcError('unavailable', 'svc is shutting down; the workflow was not started');
    },
    add(entry) {
      running.add(entry);
      return () => running.delete(entry);
    },
  };
  const service: WorkflowService = {
    runs,
    teams: deps.stores.teams,
    templates: deps.stores.templates,
    worktrees: deps.stores.worktrees,
    worktreeWorkspace: deps.stores.worktreeWorkspace,
    start: async (caller, spec) => await startPipeline({ ...deps, store: runs, registry }, caller, spec),
    active: () => running.size,
    quiesce() {
      closing = true;
      for (const entry of running) entry.interrupt(reason);
    },
    async close() {
      service.quiesce();
      const entries = [...running];
      const settled = Promise.all(entries.map((e) => e.done));
      let timer: NodeJS.Timeout | undefined;
      const timedOut = await Promise.race([
        settled.then(() => false),
        new Promise<boolean>((resolve) => {
          timer = setTimeout(() => resolve(true), CLOSE_TIMEOUT_MS);
          timer.unref();
        }),
      ]);
      clearTimeout(timer);
      if (timedOut) {
        for (const entry of running) entry.abort(reason);
        await Promise.race([settled, new Promise((resolve) => setTimeout(resolve, 1000).unref())]);
      }
    },
  };
  return service;
}
