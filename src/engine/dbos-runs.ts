/**
 * Durable runs on DBOS Transact (issue 19, `[engine] kind = "dbos"`; docs/engine.md). A root run
 * started on this node runs as a DBOS workflow whose id is the run id, checkpointed in the same
 * PostgreSQL database as the rest of svc (DBOS's own schema `dbos`); this node is DBOS executor
 * `<runner id>`. When a node dies, the live nodes' recovery (src/runs/pg-run-ledger.ts, on every
 * heartbeat) offers its running runs here: exactly one node takes each over (a conditional UPDATE
 * on the run's owner), records `run_adopted` (from node, to node, step) and hands the workflow
 * back to DBOS (`resumeWorkflow`), which queues it for one live node to run. There the workflow's
 * unfinished step runs again and resumes the run from its first unfinished step
 * (src/agent/run-resume.ts): the model is not asked again for what it already answered, and a call
 * that started and never reported back is not run again.
 *
 * A queued run's workflow left PENDING on a node that died before claiming the run is put back
 * onto the queue by a live node (./dbos-recovery.ts, on the same heartbeat).
 *
 * A node stopped cleanly (SIGTERM) while another node is alive hands its runs over: their execution
 * stops here unfinished, their workflows stay pending, and its node row goes with the ledger's
 * close, so a live node adopts them at its next heartbeat (`handOver`). A lone node interrupts them.
 *
 * DBOS is one per process (a static singleton): one App per process may use this engine (a server
 * node is one). `@dbos-inc/dbos-sdk` is loaded only here, only when the engine is selected.
 * @module
 */
import { AsyncResource } from 'node:async_hooks';
import type { DurableRuns } from '../agent/deps';
import { SvcError } from '../errors';
import type { Logger } from '../log';
import type { AgentRun, RunLedger } from '../runs/run-ledger';
import { createRunQueue, type RunQueueLimits } from './dbos-queue';
import { adoptOrphan, requeueStranded } from './dbos-recovery';

type Dbos = typeof import('@dbos-inc/dbos-sdk').DBOS;

export interface DbosRunsDeps {
  /** The PostgreSQL store's URL (DBOS's system database; never logged). */
  url: string;
  /** This node's runner id: its DBOS executor id. */
  node: string;
  /** svc's version: DBOS resumes a workflow only on nodes of the same application version. */
  version: string;
  log: Logger;
  runs: Pick<RunLedger, 'takeOver' | 'owner' | 'othersAlive' | 'requeue'>;
  /**
   * Run here a run DBOS gave this node: a queued run dequeued here, or one whose node died
   * (src/agent/run-control.ts `resumeRun`); bound late.
   */
  resume(runId: string): Promise<unknown>;
  /** The run queue's limits (`[engine]`, ./dbos-queue.ts). */
  limits: RunQueueLimits;
}

export interface DbosRuns extends DurableRuns {
  /** DBOS connects, migrates its schema and starts dequeuing (resumed runs) on this node. */
  launch(): Promise<void>;
  /** The recovery's hook: take over a running run whose node is gone; true when handled here. */
  adoptOrphan(run: AgentRun): Promise<boolean>;
  /**
   * The recovery's other hook: put back on the queue the run workflows a node that is gone was
   * given and left pending (`gone`: the recovery's rule), each exactly once cluster-wide.
   */
  requeueStranded(gone: (node: string, since: number | undefined) => boolean): Promise<void>;
  close(): Promise<void>;
}

/** The App of this process that holds DBOS (it is a process-wide singleton). */
let holder: string | undefined;

export async function createDbosRuns(deps: DbosRunsDeps): Promise<DbosRuns> {
  if (holder && holder !== deps.node)
    throw new SvcError(
      'config_error',
      '[engine] kind = "dbos": another App of this process already runs the DBOS engine (DBOS is one per process); run one svc node per process',
    );
  holder = deps.node;
  const { DBOS } = (await import('@dbos-inc/dbos-sdk')) as { DBOS: Dbos };
  /** Executions of runs started here, waiting for their workflow to call them. */
  const local = new Map<string, () => Promise<unknown>>();
  /** Runs whose workflow executes here now; at a clean stop, those handed over. */
  const running = new Set<string>();
  let handedOver = new Set<string>();
  /** The outcome of a run started here and handed over, to its caller (its workflow stays pending). */
  const parked = new Map<string, (outcome: unknown) => void>();
  const execution = async (runId: string): Promise<unknown> => {
    const body = local.get(runId);
    if (body) {
      local.delete(runId);
      return body();
    }
    // Not started here: a queued run dequeued here, or one whose node died and this node was given.
    deps.log.info('running a run DBOS gave this node', { run_id: runId, node: deps.node });
    return deps.resume(runId);
  };
  const dispatch = async (runId: string): Promise<unknown> => {
    running.add(runId);
    let outcome: unknown;
    try {
      outcome = await execution(runId);
    } finally {
      running.delete(runId);
    }
    if (!handedOver.has(runId)) return outcome ?? null;
    // Handed over: the step never completes here, so the workflow stays pending for a live node.
    parked.get(runId)?.(outcome);
    return new Promise<never>(() => {});
  };
  const workflow = DBOS.registerWorkflow(
    async (runId: string) => DBOS.runStep(() => dispatch(runId), { name: 'run' }),
    { name: 'svc.run' },
  );
  const queue = createRunQueue(DBOS, workflow, deps.limits);
  DBOS.setConfig({
    name: 'svc',
    systemDatabaseUrl: deps.url,
    executorID: deps.node,
    applicationVersion: deps.version,
    logger: dbosLogger(deps.log),
  });
  let launched = false;
  /** This node's context outside any workflow (made here, before any runs). */
  const outsideWorkflows = new AsyncResource('svc.durable-runs');

  return {
    async launch() {
      try {
        await DBOS.launch();
        await queue.register();
        launched = true;
      } catch (error) {
        holder = undefined;
        throw new SvcError(
          'unavailable',
          `[engine] kind = "dbos": DBOS could not start on the PostgreSQL store: ${firstLine(error)}`,
          { cause: error },
        );
      }
    },
    async execute<T>(runId: string, body: () => Promise<T>): Promise<T> {
      // A run started from inside another run's workflow (a tool starting a run) runs in it.
      if (!launched || DBOS.isWithinWorkflow()) return body();
      local.set(runId, body);
      const handover = new Promise<T>((resolve) => parked.set(runId, (outcome) => resolve(outcome as T)));
      try {
        const handle = await DBOS.startWorkflow(workflow, { workflowID: runId })(runId);
        return await Promise.race([handle.getResult() as Promise<T>, handover]);
      } catch (error) {
        if (!local.has(runId)) throw error;
        // DBOS could not record the workflow (the database is away): the run goes on here,
        // not durable, rather than not at all.
        local.delete(runId);
        deps.log.warn('the run is not durable: DBOS could not start its workflow', {
          run_id: runId,
          error: firstLine(error),
        });
        return body();
      } finally {
        parked.delete(runId);
      }
    },
    async handOver() {
      if (!launched || running.size === 0) return new Set<string>();
      const others = await deps.runs.othersAlive?.().catch(() => false);
      handedOver = others ? new Set(running) : new Set<string>();
      deps.log.info(
        others ? 'handing runs over to a live node' : 'no other node is alive: runs are interrupted',
        { runs: [...running], node: deps.node },
      );
      return handedOver;
    },
    async enqueue(runId, workspace) {
      // A run started from inside another run's workflow runs in it (never waits for a slot).
      if (!launched || DBOS.isWithinWorkflow()) return undefined;
      return await queue.enqueue(runId, await workspace());
    },
    async adoptOrphan(run) {
      if (!launched || run.parent_run_id || !deps.runs.takeOver) return false;
      const status = await DBOS.getWorkflowStatus(run.id);
      if (!status || (status.status !== 'PENDING' && status.status !== 'ENQUEUED')) return false;
      await adoptOrphan(DBOS, deps, run, queue.resumeOptions(status));
      return true;
    },
    async requeueStranded(gone) {
      if (launched) await requeueStranded(DBOS, deps, gone);
    },
    outside: (fn) => outsideWorkflows.runInAsyncScope(fn),
    async close() {
      if (launched) {
        launched = false;
        await DBOS.shutdown();
      }
      if (holder === deps.node) holder = undefined;
    },
  };
}

function firstLine(error: unknown): string {
  return (error instanceof Error ? error.message : String(error)).split('\n')[0] ?? '';
}

/** DBOS's logs go to svc's log file (never stdout: MCP stdio and the TUI own it). */
function dbosLogger(log: Logger) {
  const text = (entry: unknown) => (typeof entry === 'string' ? entry : firstLine(entry));
  return {
    info: (entry: unknown) => log.debug(`dbos: ${text(entry)}`),
    debug: (entry: unknown) => log.debug(`dbos: ${text(entry)}`),
    warn: (entry: unknown) => log.warn(`dbos: ${text(entry)}`),
    error: (entry: unknown) => log.error(`dbos: ${text(entry)}`),
  };
}
