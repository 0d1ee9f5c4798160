/**
 * The run queue of the durable engine (issue 19 item 3, `[engine] kind = "dbos"`; docs/engine.md
 * "The run queue"). A root run started on a serving node is not run there at once: its workflow
 * (`svc.run`, id = the run id) is enqueued on one DBOS queue, `svc_runs`, partitioned by the real
 * path of the run's workspace, and whichever live node DBOS gives it to runs it there.
 *
 * - one run per workspace at a time, cluster-wide: the partition's concurrency is 1 (DBOS counts
 *   the partition's running workflows in the database, whichever node runs them);
 * - `[engine] max_runs`: the queue's global concurrency (every partition, every node); unset: none;
 * - `[engine] max_runs_per_node`: the queue's worker concurrency (default 16);
 * - `[engine] queue_poll_ms`: how often at least a node polls the queue (DBOS's default, 1000).
 *
 * A partitioned queue, not one queue per workspace: DBOS limits concurrency per queue, so only one
 * queue can carry a cluster-wide limit across workspaces; its partitions carry the per-workspace
 * one. The limits are the queue's row in DBOS's tables: every node writes its own at launch, so the
 * nodes of a cluster should share their `[engine]` settings (the last node started wins).
 *
 * Sub-agent runs are never queued: they run inside their parent's workflow (a call of the parent
 * that started and never reported back is settled as an unknown outcome on recovery, as any call),
 * so a child never waits for the partition slot its parent holds.
 * @module
 */
import { realpathSync } from 'node:fs';
import { resolve } from 'node:path';
import type { EngineConfig } from '../config/schema';

type Dbos = typeof import('@dbos-inc/dbos-sdk').DBOS;
type Workflow = (runId: string) => Promise<unknown>;

/** The DBOS queue of root runs. */
export const RUN_QUEUE = 'svc_runs';
export const DEFAULT_MAX_RUNS_PER_NODE = 16;
export const DEFAULT_QUEUE_POLL_MS = 1000;

export type RunQueueLimits = Pick<EngineConfig, 'max_runs' | 'max_runs_per_node' | 'queue_poll_ms'>;

/** The queue's DBOS parameters for the `[engine]` limits. */
export function runQueueParameters(limits: RunQueueLimits) {
  const perNode = limits.max_runs_per_node ?? DEFAULT_MAX_RUNS_PER_NODE;
  return {
    partitionConcurrency: 1,
    ...(limits.max_runs !== undefined ? { globalConcurrency: limits.max_runs } : {}),
    // No node runs more than the cluster may (DBOS refuses a worker limit above the global one).
    workerConcurrency: limits.max_runs !== undefined ? Math.min(perNode, limits.max_runs) : perNode,
    minPollingIntervalMs: limits.queue_poll_ms ?? DEFAULT_QUEUE_POLL_MS,
  };
}

/** The partition of a workspace: its real path (two spellings of one directory are one partition). */
export function workspacePartition(workspace: string): string {
  try {
    return realpathSync(workspace);
  } catch {
    return resolve(workspace);
  }
}

export interface RunQueue {
  /** The queue's row written (after DBOS launched); its limits apply cluster-wide. */
  register(): Promise<void>;
  /**
   * Enqueue the run's workflow on its workspace's partition (idempotent: the workflow id is the
   * run id; a queued run's workflow that already ended goes back onto the queue); `done` settles
   * when the run's workflow ends, on whichever node ran it; `already`: it was on the queue (or
   * running) before this call.
   */
  enqueue(runId: string, workspace: string): Promise<{ done: Promise<void>; already: boolean }>;
  /** The queue a workflow goes back to when its node died: its own partition, if it was queued. */
  resumeOptions(status: { queueName?: string } | null): { queueName?: string };
}

export function createRunQueue(dbos: Dbos, workflow: Workflow, limits: RunQueueLimits): RunQueue {
  return {
    async register() {
      await dbos.registerQueue(RUN_QUEUE, { ...runQueueParameters(limits), onConflict: 'always_update' });
    },
    async enqueue(runId, workspace) {
      const partition = workspacePartition(workspace);
      const before = (await dbos.getWorkflowStatus(runId))?.status;
      let handle = await dbos.startWorkflow(workflow, {
        workflowID: runId,
        queueName: RUN_QUEUE,
        enqueueOptions: { queuePartitionKey: partition },
      })(runId);
      // Its workflow already ended while the run is still queued (the node DBOS gave it to was
      // stopping and did not start it): the same workflow goes back onto the queue from its start.
      const ended = before === 'SUCCESS' || before === 'ERROR';
      if (ended)
        handle = await dbos.rewindWorkflow(runId, { queueName: RUN_QUEUE, queuePartitionKey: partition });
      return { done: handle.getResult().then(() => undefined), already: before !== undefined && !ended };
    },
    resumeOptions(status) {
      // resumeWorkflow keeps the row's partition key: back on the queue, the run waits for its
      // workspace's slot again (its dead node's PENDING row held it until now).
      return status?.queueName === RUN_QUEUE ? { queueName: RUN_QUEUE } : {};
    },
  };
}
