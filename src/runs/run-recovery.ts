/**
 * The ledger's recovery: whether a row's owning process is alive, and marking the running runs of
 * a process that is gone `interrupted`.
 * @module
 */
import type { Clock } from '../util/ids';
import type { SqliteRunQueries } from './queries';
import type { RunWrites } from './run-repository';
import type { AgentRun, RunEvent } from './types';

export interface RunOwner {
  pid: number;
  host: string;
  runner: string;
}

export interface RunRecoveryDeps {
  owner: RunOwner;
  clock: Clock;
  queries: Pick<SqliteRunQueries, 'get' | 'runningAll'>;
  writes: Pick<RunWrites, 'interruptIfRunning'>;
  appendEvent(runId: string, sessionId: string, type: string, payload: Record<string, unknown>): RunEvent;
  isLiveRunner?: (runner: string) => boolean;
  onRecovered?: (runs: AgentRun[]) => void;
}

export interface RunRecovery {
  ownerAlive(run: AgentRun): boolean;
  recover(): AgentRun[];
  recovered(): AgentRun[];
}

export function createRunRecovery(deps: RunRecoveryDeps): RunRecovery {
  const { owner } = deps;
  let recoveredRuns: AgentRun[] = [];

  const ownerAlive = runOwnerAlive(owner, deps.isLiveRunner);

  function recover(): AgentRun[] {
    const orphans = deps.queries.runningAll().filter((run) => !ownerAlive(run));
    if (orphans.length === 0) return [];
    const now = deps.clock.now();
    const marked: AgentRun[] = [];
    for (const run of orphans) {
      const reason = `the process running it (pid ${run.pid ?? '?'}) exited before the run finished`;
      if (!deps.writes.interruptIfRunning(run.id, reason, now)) continue;
      deps.appendEvent(run.id, run.session_id, 'run.interrupted', { reason, pid: run.pid });
      marked.push(deps.queries.get(run.id)!);
    }
    recoveredRuns = [...recoveredRuns, ...marked];
    if (marked.length) deps.onRecovered?.(marked);
    return marked;
  }

  return { ownerAlive, recover, recovered: () => [...recoveredRuns] };
}

/**
 * Whether a run's owner is alive: this App; a live App of this process; on this machine, a
 * process that still exists. A run of another machine cannot be checked and counts as alive.
 */
export function runOwnerAlive(
  owner: RunOwner,
  isLiveRunner?: (runner: string) => boolean,
): (run: Pick<AgentRun, 'runner' | 'host' | 'pid'>) => boolean {
  return (run) => {
    if (run.runner === owner.runner) return true;
    if (run.pid === null) return false;
    if (run.host !== owner.host) return true; // another machine: cannot tell, assume alive
    if (run.pid === owner.pid) return run.runner !== null && (isLiveRunner?.(run.runner) ?? false);
    return processAlive(run.pid);
  };
}

/**
 * Runners (Apps) alive in this process. Process identity is process-wide by nature: several Apps
 * can share one process (tests, an HTTP server hosting a TUI), and a row owned by a sibling App
 * that is still open is not an orphan.
 */
const liveRunners = new Set<string>();

export function registerRunner(runner: string): () => void {
  liveRunners.add(runner);
  return () => {
    liveRunners.delete(runner);
  };
}

export const isLiveRunner = (runner: string): boolean => liveRunners.has(runner);

export function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}
