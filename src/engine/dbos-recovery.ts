/**
 * What a live node does for the durable engine on each recovery (issue 19, docs/engine.md): it
 * adopts the running runs of a node that is gone (`adoptOrphan`), and puts back onto the queue the
 * runs a node that is gone was given and never took (`requeueStranded`). Both put a workflow back
 * under the lock the claims of the run's session take (`RunLedger.requeue`), each after reading
 * the run and its workflow again there, so no two nodes put one workflow back, and neither puts
 * back a workflow a live node has dequeued meanwhile.
 *
 * Runs a dead node was given by the run queue and never claimed (docs/engine.md "The
 * run queue"). DBOS's dequeue marks a queued workflow PENDING on the node it gives it to; that
 * node then claims the run (`queued` → `running`). A node that dies between the two leaves the
 * workflow PENDING on its executor, holding its workspace partition's slot, while the run is still
 * `queued`: the adoption (./dbos-runs.ts `adoptOrphan`) looks only at `running` runs, and DBOS
 * recovers an executor's PENDING workflows only when a node with the same executor id starts.
 *
 * On every recovery (each heartbeat, src/runs/pg-run-recovery.ts), each live node looks for such
 * workflows on the run queue whose node is gone (the recovery's rule: a dead process on this
 * machine, a heartbeat older than `node_stale_ms` on another) and puts each back onto the queue
 * (`resumeWorkflow`: ENQUEUED in its own partition, first in line), exactly once cluster-wide:
 * under the lock the claims of the run's session take, it reads the workflow again and puts it
 * back only while it is still PENDING on that node (`RunLedger.requeue`). The run's ledger gets
 * `run.enqueued` again (`node`: the node that put it back). A run that node had already finished
 * (it died before its workflow ended) goes back the same way, with no event: a live node dequeues
 * it, finds it ended and ends the workflow (src/agent/run-control.ts `resumeRun`). So does an
 * adopted run whose workflow that node had dequeued and not yet taken over (the run `running`,
 * owned by the node that adopted it): the node that dequeues it takes it over. An adopted run that
 * was never queued went back onto DBOS's internal queue (`resumeWorkflow` without a queue name):
 * it is looked for there too, and goes back there.
 * @module
 */
import type { Logger } from '../log';
import type { AgentRun, RunLedger } from '../runs/run-ledger';
import { RUN_QUEUE } from './dbos-queue';

/** The name svc's run workflow is registered under (./dbos-runs.ts). */
export const RUN_WORKFLOW = 'svc.run';
/** DBOS's queue for workflows resumed without a queue name (`INTERNAL_QUEUE_NAME` in the SDK). */
const DBOS_INTERNAL_QUEUE = '_dbos_internal_queue';

type Dbos = typeof import('@dbos-inc/dbos-sdk').DBOS;

interface RecoveryDeps {
  node: string;
  log: Logger;
  runs: Pick<RunLedger, 'takeOver' | 'owner' | 'requeue' | 'queries'>;
}

/**
 * Take over a running run whose node is gone and hand its workflow back to DBOS (onto the queue
 * it was on): exactly one live node does, with `run_adopted` (from node, to node, step). Only while
 * its workflow is where that node left it (pending on it, or queued): a workflow another node
 * dequeued is that node's to take over, or, if that node is gone too, put back (`requeueStranded`).
 */
export async function adoptOrphan(
  dbos: Dbos,
  deps: RecoveryDeps,
  run: AgentRun,
  resumeOptions: { queueName?: string },
): Promise<void> {
  const takeOver = deps.runs.takeOver;
  if (!takeOver) return;
  const adopt = async (): Promise<boolean> => {
    // Exactly one live node takes it over; the others see it owned by a live node.
    const taken = await takeOver(run.id, run.runner, {
      type: 'run_adopted',
      payload: {
        from_node: run.runner,
        from_host: run.host,
        from_pid: run.pid,
        to_node: deps.node,
        to_host: deps.runs.owner.host,
        step: run.steps,
      },
    });
    if (!taken) return false;
    deps.log.info('adopted a run whose node is gone', {
      run_id: run.id,
      from_node: run.runner,
      step: run.steps,
    });
    await dbos.resumeWorkflow(run.id, resumeOptions);
    return true;
  };
  if (!deps.runs.requeue) {
    await adopt();
    return;
  }
  await deps.runs.requeue(run.id, async (row) => {
    if (row.status !== 'running' || row.runner !== run.runner) return false;
    const now = await dbos.getWorkflowStatus(run.id);
    const left = now?.status === 'ENQUEUED' || (now?.status === 'PENDING' && now.executorId === run.runner);
    return left && (await adopt()) ? null : false;
  });
}

export async function requeueStranded(
  dbos: Dbos,
  deps: RecoveryDeps,
  gone: (node: string, since: number | undefined) => boolean,
): Promise<void> {
  if (!deps.runs.requeue) return;
  // Dequeued (PENDING) on a node that is gone. A run it had claimed (`running`) is adopted; one it
  // had not claimed yet, or had finished before its workflow ended, goes back onto the queue.
  // On the run queue, or on DBOS's internal queue: where an adopted run that was never queued goes
  // back (`resumeWorkflow` without a queue), so its dequeuer can die before taking it over too.
  const pending = await dbos.listWorkflows({
    status: 'PENDING',
    workflowName: RUN_WORKFLOW,
    queueName: [RUN_QUEUE, DBOS_INTERNAL_QUEUE],
    loadInput: false,
    loadOutput: false,
  });
  for (const found of pending) {
    const node = found.executorId;
    if (!node || node === deps.node || !gone(node, found.dequeuedAt ?? found.updatedAt)) continue;
    await putBack(deps, found.workflowID, node, LEFT_PENDING, async (run) => {
      // Its own running run is adopted (adoptOrphan, with `run_adopted`).
      if (run.status === 'running' && run.runner === node) return false;
      // Read again under the session's claim lock: still left on that node (no other node put it
      // back meanwhile), so exactly one node puts it back.
      const now = await dbos.getWorkflowStatus(found.workflowID);
      if (now?.status !== 'PENDING' || now.executorId !== node) return false;
      // resumeWorkflow keeps the row's partition key: it waits for its workspace's slot again.
      // One from the internal queue goes back there (no queue name: DBOS's default).
      await dbos.resumeWorkflow(
        found.workflowID,
        now.queueName === RUN_QUEUE ? { queueName: RUN_QUEUE } : {},
      );
      return run.status === 'queued' ? enqueued(deps, now.queuePartitionKey) : null;
    });
  }
}

/** How many queued runs (newest first) one recovery looks at for an ended workflow. */
const QUEUED_LOOKED_AT = 200;

/**
 * Runs still `queued` whose workflow ended without starting them: the node DBOS gave one to was
 * stopping (it starts nothing), and the node that queued it, which puts such a workflow back when
 * it sees it end (./dbos-queue.ts `enqueue`), is gone too. Once the workflow has been ended for
 * longer than the recovery's rule allows its node (a node stopped cleanly has no heartbeat row:
 * `node_stale_ms`), a live node puts it back onto its partition from its start (`rewindWorkflow`),
 * exactly once cluster-wide (under the session's claim lock, the workflow read again there), with
 * `run.enqueued`. Only a workflow that ended in success: one that failed is left to the session's
 * next send, so a failure that repeats cannot loop.
 */
export async function rewindAbandoned(
  dbos: Dbos,
  deps: RecoveryDeps,
  gone: (node: string, since: number | undefined) => boolean,
): Promise<void> {
  if (!deps.runs.requeue) return;
  // Its queries, not `list`: this runs inside the recovery, which `list` waits for.
  const queued = await deps.runs.queries.list({ status: ['queued'], limit: QUEUED_LOOKED_AT });
  const workflowIDs = queued.filter((run) => !run.parent_run_id).map((run) => run.id);
  // One read for all of them (DBOS builds `IN ()` from an empty list: not asked then).
  if (workflowIDs.length === 0) return;
  const ended = await dbos.listWorkflows({
    workflowIDs,
    status: 'SUCCESS',
    queueName: RUN_QUEUE,
    loadInput: false,
    loadOutput: false,
    sortDesc: true,
  });
  for (const found of ended) {
    const node = found.executorId;
    if (!node || node === deps.node || !gone(node, found.updatedAt)) continue;
    const runId = found.workflowID;
    await putBack(deps, runId, node, ENDED_UNSTARTED, async (row) => {
      if (row.status !== 'queued') return false;
      const now = await dbos.getWorkflowStatus(runId);
      if (now?.status !== 'SUCCESS') return false;
      const partition = now.queuePartitionKey;
      await dbos.rewindWorkflow(runId, {
        queueName: RUN_QUEUE,
        ...(partition ? { queuePartitionKey: partition } : {}),
      });
      return enqueued(deps, partition);
    });
  }
}

const LEFT_PENDING = {
  done: 'put back on the queue a run its node left before claiming it',
  failed: 'could not put back a run left on a node that is gone',
};
const ENDED_UNSTARTED = {
  done: 'put back on the queue a queued run whose workflow ended without starting it',
  failed: 'could not put back a queued run whose workflow ended',
};

/** The ledger event of a run put back onto the queue by this node. */
function enqueued(deps: RecoveryDeps, partition: string | undefined) {
  return {
    type: 'run.enqueued',
    payload: { queue: 'workspace', workspace: partition ?? null, node: deps.node },
  };
}

/**
 * `RunLedger.requeue` of one run a node that is gone left, said in the log either way; a failure
 * (the database away) waits for the next recovery, never fails this one.
 */
async function putBack(
  deps: RecoveryDeps,
  runId: string,
  fromNode: string,
  what: { done: string; failed: string },
  body: Parameters<NonNullable<RunLedger['requeue']>>[1],
): Promise<void> {
  try {
    if (await deps.runs.requeue?.(runId, body))
      deps.log.info(what.done, { run_id: runId, from_node: fromNode });
  } catch (error) {
    deps.log.warn(what.failed, {
      run_id: runId,
      from_node: fromNode,
      error: (error instanceof Error ? error.message : String(error)).split('\n')[0],
    });
  }
}
