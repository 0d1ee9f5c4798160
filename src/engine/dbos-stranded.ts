/**
 * Runs a dead node was given by the run queue and never claimed (issue 19, docs/engine.md "The
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
 * it, finds it ended and ends the workflow (src/agent/run-control.ts `resumeRun`).
 * @module
 */
import type { Logger } from '../log';
import type { RunLedger } from '../runs/run-ledger';
import { RUN_QUEUE } from './dbos-queue';

type Dbos = typeof import('@dbos-inc/dbos-sdk').DBOS;

export async function requeueStranded(
  dbos: Dbos,
  deps: { node: string; log: Logger; runs: Pick<RunLedger, 'requeue'> },
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
