/**
 * The PostgreSQL run ledger's recovery (./pg-run-ledger.ts): which running runs' owners are gone
 * and what becomes of them. On first use and then on every heartbeat (`heartbeatMs`), with the
 * nodes' heartbeats (./pg-node-liveness.ts): a run whose node is gone is offered to the durable
 * engine (`onOrphan`), else marked `interrupted`, by exactly one live node (a conditional UPDATE),
 * with `run.interrupted` appended.
 * @module
 */

import type { SqlClient } from '../store/postgres/client';
import type { Clock } from '../util/ids';
import { createNodeLiveness } from './pg-node-liveness';
import type { PostgresRunWrites } from './pg-run-write-repository';
import type { RunQueries } from './queries';
import { type RunOwner, runOwnerAlive } from './run-recovery';
import type { AgentRun, RunEvent } from './types';

/** What of the ledger's deps (./pg-run-ledger.ts) the recovery uses. */
export interface PostgresRecoveryDeps {
  sql: SqlClient;
  clock: Clock;
  isLiveRunner?: (runner: string) => boolean;
  nodes?: { heartbeatMs: number; staleMs: number };
  onJanitorError?: (error: unknown) => void;
  onRecovered?: (runs: AgentRun[]) => void;
  afterFirstRecovery?: () => void;
}

export function createPostgresRunRecovery(input: {
  deps: PostgresRecoveryDeps;
  owner: RunOwner;
  queries: Pick<RunQueries, 'runningAll' | 'get'>;
  writes: Pick<PostgresRunWrites, 'interruptIfRunning'>;
  appendTo(
    runId: string,
    sessionId: string,
    type: string,
    payload: Record<string, unknown>,
  ): Promise<RunEvent>;
}) {
  const { deps, owner, queries, writes, appendTo } = input;
  const { sql, clock } = deps;
  const liveness = deps.nodes
    ? createNodeLiveness({ sql, clock, ...owner, staleMs: deps.nodes.staleMs })
    : undefined;
  const localAlive = runOwnerAlive(owner, deps.isLiveRunner);
  /** A run of another machine: its node's heartbeat says (alive until the first read of them). */
  const ownerAlive = (run: Pick<AgentRun, 'runner' | 'host' | 'pid'>): boolean =>
    liveness && run.host !== null && run.host !== owner.host && run.runner !== null
      ? (liveness.alive(run.runner) ?? true)
      : localAlive(run);
  let recoveredRuns: AgentRun[] = [];

  const whyGone = (run: AgentRun): string => {
    const silent = run.runner ? liveness?.silentFor(run.runner) : undefined;
    if (run.host !== null && run.host !== owner.host)
      return silent !== undefined
        ? `its node (${run.host}, pid ${run.pid ?? '?'}) stopped sending heartbeats ${Math.round(silent / 1000)} s ago, before the run finished`
        : `its node (${run.host}, pid ${run.pid ?? '?'}) stopped before the run finished`;
    return `the process running it (pid ${run.pid ?? '?'}) exited before the run finished`;
  };

  let orphanHandler: ((run: AgentRun) => Promise<boolean>) | undefined;
  let strandedHandler:
    | ((gone: (node: string, since: number | undefined) => boolean) => Promise<void>)
    | undefined;

  /**
   * Whether the node of runner id `node` is gone, by the rule of a run's owner (its heartbeat row
   * says its host and pid). No row: it stopped cleanly or has not beaten yet (a node beats when it
   * starts), so it is gone only for what it was given more than `staleMs` before now. `since` is
   * the database's time (DBOS stamps its rows with `now()`), so "now" is the database's too, as of
   * the last read of the heartbeats: a machine whose clock runs ahead must not take a node that
   * was just given work for gone.
   */
  const nodeGone = (node: string, since: number | undefined): boolean => {
    if (!liveness || !deps.nodes || node === owner.runner) return false;
    const row = liveness.node(node);
    if (row) return !ownerAlive({ runner: node, host: row.host, pid: row.pid });
    const now = liveness.refreshedAt();
    return since !== undefined && now !== undefined && since < now - deps.nodes.staleMs;
  };

  async function recover(): Promise<AgentRun[]> {
    const orphans = (await queries.runningAll()).filter((run) => !ownerAlive(run));
    const now = clock.now();
    const marked: AgentRun[] = [];
    for (const run of orphans) {
      // The durable engine takes over what it can resume; the rest is interrupted.
      if (orphanHandler && (await orphanHandler(run))) continue;
      const reason = whyGone(run);
      if (!(await writes.interruptIfRunning(run.id, reason, now))) continue;
      await appendTo(run.id, run.session_id, 'run.interrupted', {
        reason,
        pid: run.pid,
        ...(run.host !== owner.host ? { host: run.host, by_node: owner.runner } : {}),
      });
      const after = await queries.get(run.id);
      if (after) marked.push(after);
    }
    recoveredRuns = [...recoveredRuns, ...marked];
    if (marked.length) deps.onRecovered?.(marked);
    // Then the work the durable engine's queue gave a node that died before it claimed it.
    // Its failure (the database away) is the janitor's, never the first-use recovery's.
    if (strandedHandler) await strandedHandler(nodeGone).catch((error) => deps.onJanitorError?.(error));
    return marked;
  }

  let janitor: ReturnType<typeof setInterval> | undefined;
  let closed = false;
  /** Every heartbeat: this node's beat, everyone's read again, dead nodes' runs recovered, old rows pruned. */
  const tick = async () => {
    if (!liveness) return;
    await liveness.beat();
    if (closed) return;
    await liveness.refresh();
    await recover();
    await liveness.prune();
  };
  const startJanitor = (heartbeatMs: number) => {
    let busy = false;
    janitor = setInterval(() => {
      if (busy || closed) return;
      busy = true;
      tick()
        .catch((error) => deps.onJanitorError?.(error))
        .finally(() => {
          busy = false;
        });
    }, heartbeatMs);
    janitor.unref();
  };

  let first: Promise<void> | undefined;
  /** The first-use recovery, once per ledger; every operation waits for it. */
  const ready = (): Promise<void> => {
    first ??= (async () => {
      if (liveness && deps.nodes && !closed && !janitor) {
        try {
          await liveness.beat();
          await liveness.refresh();
        } catch (error) {
          deps.onJanitorError?.(error);
        }
        startJanitor(deps.nodes.heartbeatMs);
      }
      await recover();
      deps.afterFirstRecovery?.();
    })().catch((error: unknown) => {
      // The database was away: the next operation tries again.
      first = undefined;
      throw error;
    });
    return first;
  };

  return {
    ownerAlive,
    ready,
    recover: () => recover(),
    recovered: () => [...recoveredRuns],
    /** Whether another node is alive now (no heartbeats: none known). */
    othersAlive: async () => (liveness ? liveness.othersAlive() : false),
    onOrphan(handler: (run: AgentRun) => Promise<boolean>) {
      orphanHandler = handler;
    },
    onStranded(handler: (gone: (node: string, since: number | undefined) => boolean) => Promise<void>) {
      strandedHandler = handler;
    },
    async close() {
      closed = true;
      if (janitor) clearInterval(janitor);
      // Its row goes if it beat (also when its first recovery failed after the beat).
      if (liveness) await liveness.close();
    },
  };
}
