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
 * owned by the node that adopted it): the node that dequeues it takes it over.
 * @module
 */
import type { Logger } from '../log';
import type { AgentRun, RunLedger } from '../runs/run-ledger';
import { RUN_QUEUE } from './dbos-queue';

type Dbos = typeof import('@dbos-inc/dbos-sdk').DBOS;

interface RecoveryDeps {
  node: string;
  log: Logger;
  runs: Pick<RunLedger, 'takeOver' | 'owner' | 'requeue'>;
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
  const requeue = deps.runs.requeue;
  if (!requeue) return;
  // Dequeued (PENDING) on a node that is gone. A run it had claimed (`running`) is adopted; one it
  // had not claimed yet, or had finished before its workflow ended, goes back onto the queue.
  const pending = await dbos.listWorkflows({
    status: 'PENDING',
    queueName: RUN_QUEUE,
    loadInput: false,
    loadOutput: false,
  });
  for (const found of pending) {
    const node = found.executorId;
    if (!node || node === deps.node || !gone(node, found.dequeuedAt ?? found.updatedAt)) continue;
    try {
      const requeued = await requeue(found.workflowID, async (run) => {
        // Its own running run is adopted (adoptOrphan, with `run_adopted`).
        if (run.status === 'running' && run.runner === node) return false;
        // Read again under the session's claim lock: still left on that node (no other node put it
        // back meanwhile), so exactly one node puts it back.
        const now = await dbos.getWorkflowStatus(found.workflowID);
        if (now?.status !== 'PENDING' || now.executorId !== node) return false;
        // resumeWorkflow keeps the row's partition key: it waits for its workspace's slot again.
        await dbos.resumeWorkflow(found.workflowID, { queueName: RUN_QUEUE });
        if (run.status !== 'queued') return null;
        return {
          type: 'run.enqueued',
          payload: { queue: 'workspace', workspace: now.queuePartitionKey ?? null, node: deps.node },
        };
      });
      if (requeued)
        deps.log.info('put back on the queue a run its node left before claiming it', {
          run_id: found.workflowID,
          from_node: node,
        });
    } catch (error) {
      deps.log.warn('could not put back a run left on a node that is gone', {
        run_id: found.workflowID,
        from_node: node,
        error: (error instanceof Error ? error.message : String(error)).split('\n')[0],
      });
    }
  }
}
