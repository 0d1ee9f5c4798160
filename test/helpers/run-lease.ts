/** A workspace lease held by a run, as a writing run holds one (src/agent/run-leases.ts). */
import type { LeaseRepository } from '../../src/workspace/lease-repository';

/** `hold(workspace, runId)`: the run takes the workspace's lease for an hour, on node `n`. */
export function runLeases(leases: Pick<LeaseRepository, 'tryAcquire'>) {
  return (workspace: string, runId: string) =>
    leases.tryAcquire({
      workspace,
      holder: `run:${runId}`,
      runId,
      node: 'n',
      now: Date.now(),
      ttlMs: 3_600_000,
    });
}
