/**
 * The recovery's look for queued runs whose workflow ended without starting them
 * (src/engine/dbos-recovery.ts `rewindAbandoned`), against a stand-in for DBOS that records what it
 * is asked: the queued runs' workflows are read in one query per recovery, not one per run, and a
 * recovery with no queued root run asks DBOS nothing (an empty id list is not a query DBOS can run).
 * The put-back itself, on real nodes: DURABLE-11 (test/cluster/durable-strand.test.ts).
 */
import { describe, expect, it } from 'vitest';
import { RUN_QUEUE } from '../../src/engine/dbos-queue';
import { rewindAbandoned } from '../../src/engine/dbos-recovery';
import { nullLogger } from '../../src/log';
import type { AgentRun } from '../../src/runs/run-ledger';

type Dbos = Parameters<typeof rewindAbandoned>[0];
type Deps = Parameters<typeof rewindAbandoned>[1];

const queuedRun = (id: string, parent?: string) =>
  ({ id, status: 'queued', parent_run_id: parent ?? null }) as unknown as AgentRun;

/** DBOS as the recovery sees it: every workflow ended (SUCCESS) on `executor`. */
function fakeDbos(ended: Record<string, string>) {
  const calls: { method: string; arg: unknown }[] = [];
  const status = (id: string) => ({
    workflowID: id,
    status: 'SUCCESS',
    executorId: ended[id],
    queueName: RUN_QUEUE,
    queuePartitionKey: '/w',
    updatedAt: 1,
  });
  const dbos = {
    async listWorkflows(input: { workflowIDs: string[] }) {
      calls.push({ method: 'listWorkflows', arg: input });
      return input.workflowIDs.filter((id) => id in ended).map(status);
    },
    async getWorkflowStatus(id: string) {
      calls.push({ method: 'getWorkflowStatus', arg: id });
      return id in ended ? status(id) : null;
    },
    async rewindWorkflow(id: string, options: unknown) {
      calls.push({ method: 'rewindWorkflow', arg: { id, options } });
    },
  };
  return { dbos: dbos as unknown as Dbos, calls };
}

function deps(queued: AgentRun[]): { deps: Deps; events: { runId: string; type: string }[] } {
  const events: { runId: string; type: string }[] = [];
  const runs = {
    queries: { list: async () => queued },
    async requeue(runId: string, putBack: (run: AgentRun) => Promise<{ type: string } | null | false>) {
      const answer = await putBack(queued.find((r) => r.id === runId)!);
      if (answer) events.push({ runId, type: answer.type });
      return answer !== false;
    },
  };
  return { deps: { node: 'live', log: nullLogger, runs: runs as unknown as Deps['runs'] }, events };
}

const gone = (node: string) => node === 'dead';

describe('the recovery of queued runs whose workflow ended', () => {
  it('DURABLE-12: reads the queued root runs’ ended workflows in one query and puts back only those of a node that is gone', async () => {
    const { dbos, calls } = fakeDbos({ r_dead: 'dead', r_live: 'other', r_child: 'dead' });
    const { deps: d, events } = deps([
      queuedRun('r_dead'),
      queuedRun('r_live'),
      queuedRun('r_waiting'),
      queuedRun('r_child', 'r_parent'),
    ]);
    await rewindAbandoned(dbos, d, gone);

    const lists = calls.filter((c) => c.method === 'listWorkflows');
    expect(lists).toHaveLength(1);
    expect(lists[0]!.arg).toMatchObject({
      workflowIDs: ['r_dead', 'r_live', 'r_waiting'],
      status: 'SUCCESS',
      queueName: RUN_QUEUE,
    });
    // The one read again under the session's claim lock is the one put back.
    expect(calls.filter((c) => c.method === 'getWorkflowStatus').map((c) => c.arg)).toEqual(['r_dead']);
    expect(calls.filter((c) => c.method === 'rewindWorkflow').map((c) => c.arg)).toEqual([
      { id: 'r_dead', options: { queueName: RUN_QUEUE, queuePartitionKey: '/w' } },
    ]);
    expect(events).toEqual([{ runId: 'r_dead', type: 'run.enqueued' }]);
  });

  it('DURABLE-12: with no queued root run, DBOS is not asked', async () => {
    const { dbos, calls } = fakeDbos({ r_child: 'dead' });
    await rewindAbandoned(dbos, deps([queuedRun('r_child', 'r_parent')]).deps, gone);
    await rewindAbandoned(dbos, deps([]).deps, gone);
    expect(calls).toEqual([]);
  });
});
