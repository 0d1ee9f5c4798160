/**
 * One writer per workspace, cluster-wide (issue 18): a run takes its workspace's lease
 * (src/workspace/leases.ts) before its first mutating tool call and holds it until it ends, so two
 * runs changing one workspace from two nodes are serialized; the second waits (cancellable by its
 * run) instead of failing. Sub-agent runs change the workspace under their root run's lease (the
 * holder is the root run), so a parent waiting on its sub-agent never deadlocks on itself. A run
 * that only reads takes nothing.
 * @module
 */
import { SvcError } from '../errors';
import type { Logger } from '../log';
import type { LeaseHandle, WorkspaceLeases } from '../workspace/leases';

interface RunRef {
  id: string;
  session_id: string;
  family_session_id: string;
  parent_run_id: string | null;
}

export interface RunLeases {
  /** A run starts: its mutations (from its session) go under its root run's lease. */
  begin(run: RunRef, workspace: string, signal: AbortSignal): void;
  /**
   * A run ends: a root run gives its lease up. No promise when it held none (nearly every run):
   * the finish's `run.finished` and idle state stay in one stretch, one append (p-pgbus).
   */
  end(run: RunRef): Promise<void> | undefined;
  /** Whether `end(run)` now would give a lease up (answer a promise). */
  releases(run: RunRef): boolean;
  /** The mutation guard: takes (or waits for) the lease before a run's first change. */
  guard(request: { tool: string; sessionId?: string }): Promise<void>;
}

interface Hold {
  workspace: string;
  holder: string;
  runId: string;
  signal: AbortSignal;
  handle?: Promise<LeaseHandle>;
}

export function createRunLeases(deps: { leases: WorkspaceLeases; log: Logger }): RunLeases {
  /** Root runs' holds by their family (root) session. */
  const holds = new Map<string, Hold>();
  /** The family of each running run's session. */
  const families = new Map<string, string>();
  /** A held lease given up; a failure logged (never taken, or the store gone: the expiry frees it). */
  const release = async (handle: Promise<LeaseHandle>, runId: string): Promise<void> => {
    try {
      await (await handle).release();
    } catch (error) {
      if (!SvcError.is(error) || error.code !== 'cancelled')
        deps.log.warn('workspace lease release failed', { run_id: runId, error });
    }
  };
  return {
    begin(run, workspace, signal) {
      families.set(run.session_id, run.family_session_id);
      if (run.parent_run_id && holds.has(run.family_session_id)) return;
      holds.set(run.family_session_id, { workspace, holder: `run:${run.id}`, runId: run.id, signal });
    },
    end(run) {
      families.delete(run.session_id);
      const hold = holds.get(run.family_session_id);
      if (!hold || hold.runId !== run.id) return undefined;
      holds.delete(run.family_session_id);
      return hold.handle ? release(hold.handle, run.id) : undefined;
    },
    releases(run) {
      const hold = holds.get(run.family_session_id);
      return hold?.runId === run.id && hold.handle !== undefined;
    },
    async guard(request) {
      const family = request.sessionId ? families.get(request.sessionId) : undefined;
      const hold = family ? holds.get(family) : undefined;
      if (!hold) return;
      hold.handle ??= deps.leases.acquire(hold.workspace, hold.holder, {
        runId: hold.runId,
        signal: hold.signal,
        onWait: (held) =>
          deps.log.info('waiting for the workspace lease', {
            run_id: hold.runId,
            workspace: hold.workspace,
            holder: held.holder,
            node: held.node,
          }),
      });
      const handle = await hold.handle;
      if (handle.lost)
        throw new SvcError(
          'conflict',
          `${request.tool}: the workspace lease of run ${hold.runId} on ${hold.workspace} expired while the run was paused and another run may have taken it; start the run again`,
        );
    },
  };
}
