/**
 * The run ledger on PostgreSQL (issue 18): the `RunLedger` of ./run-ledger.ts assembled over the
 * async repositories (`RunQueries` from ./pg-run-queries.ts, the writes of
 * ./pg-run-write-repository.ts), so every node of a cluster shares one ledger. What SQLite decides
 * inside one process, the database decides here:
 * - `claim` runs in one transaction under an advisory lock on the session, and the move to running
 *   is `UPDATE … WHERE status = 'queued'`: of two nodes claiming one run exactly one wins, the
 *   other gets the same conflict as on SQLite;
 * - the cancel flag is a column every node reads (`cancelRequested`);
 * - an event's per-run seq is taken under the run's row lock; `onAppend` listeners run once the
 *   row is written, on the node that appended.
 * Recovery marks `interrupted` the running runs whose owner is gone, with the SQLite rule
 * (./run-recovery.ts `runOwnerAlive`: this App's and this process's live Apps' runs are alive, a
 * run of this machine whose process is gone is recovered) and, for a run of another machine, the
 * nodes' heartbeats (./pg-node-liveness.ts): its node's heartbeat older than `staleMs` means the
 * node is gone. It runs on first use and then on every heartbeat (`heartbeatMs`), so a dead node's
 * runs are interrupted by the live nodes within about `staleMs + heartbeatMs`; of several live
 * nodes exactly one marks each (a conditional UPDATE) and appends `run.interrupted`.
 * @module
 */
import { hostname } from 'node:os';
import { SvcError } from '../errors';
import type { SqlClient } from '../store/postgres/client';
import { createNodeLiveness } from './pg-node-liveness';
import { createPostgresRunQueries } from './pg-run-queries';
import { createPostgresRunWrites, type PostgresRunWrites } from './pg-run-write-repository';
import type { RunQueries } from './queries';
import type { RunLedger, RunLedgerDeps } from './run-ledger';
import { runOwnerAlive } from './run-recovery';
import type { ClaimResult } from './run-writes';
import type { AgentRun, RunEvent } from './types';

export interface PostgresRunLedgerDeps extends Omit<RunLedgerDeps, 'db' | 'dbPath'> {
  sql: SqlClient;
  /** The reads and writes (default: the PostgreSQL repositories over `sql`). */
  queries?: RunQueries;
  writes?: PostgresRunWrites;
  /** The nodes' heartbeats (`[store] node_heartbeat_ms`, `node_stale_ms`); unset, none are written. */
  nodes?: { heartbeatMs: number; staleMs: number };
  /** A heartbeat or a periodic recovery failed (the database is away: the next one tries again). */
  onJanitorError?: (error: unknown) => void;
}

export function createPostgresRunLedger(deps: PostgresRunLedgerDeps): RunLedger {
  const { sql, clock } = deps;
  const queries = deps.queries ?? createPostgresRunQueries({ sql });
  const writes = deps.writes ?? createPostgresRunWrites({ sql });
  const owner = { pid: deps.pid ?? process.pid, host: deps.host ?? hostname(), runner: deps.runner };
  const liveness = deps.nodes
    ? createNodeLiveness({ sql, clock, ...owner, staleMs: deps.nodes.staleMs })
    : undefined;
  const localAlive = runOwnerAlive(owner, deps.isLiveRunner);
  /** A run of another machine: its node's heartbeat says (alive until the first read of them). */
  const ownerAlive = (run: AgentRun): boolean =>
    liveness && run.host !== null && run.host !== owner.host && run.runner !== null
      ? (liveness.alive(run.runner) ?? true)
      : localAlive(run);
  const events = postgresRunEvents(deps, queries, writes);
  const { appendTo } = events;
  let recoveredRuns: AgentRun[] = [];

  const whyGone = (run: AgentRun): string => {
    const node = run.runner ? liveness?.node(run.runner) : undefined;
    if (run.host !== null && run.host !== owner.host)
      return node
        ? `its node (${run.host}, pid ${run.pid ?? '?'}) stopped sending heartbeats ${Math.round((clock.now() - node.heartbeat_at) / 1000)} s ago, before the run finished`
        : `its node (${run.host}, pid ${run.pid ?? '?'}) stopped before the run finished`;
    return `the process running it (pid ${run.pid ?? '?'}) exited before the run finished`;
  };

  let orphanHandler: ((run: AgentRun) => Promise<boolean>) | undefined;

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
    return marked;
  }

  let janitor: ReturnType<typeof setInterval> | undefined;
  let closed = false;
  /** Every heartbeat: this node's beat, everyone's read again, the dead nodes' runs recovered. */
  const tick = async () => {
    if (!liveness) return;
    await liveness.beat();
    await liveness.refresh();
    await recover();
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
  const read =
    <A extends unknown[], R>(fn: (...args: A) => Promise<R>) =>
    async (...args: A): Promise<R> => {
      await ready();
      return fn(...args);
    };
  const requireRun = async (id: string): Promise<AgentRun> => {
    const run = await queries.get(id);
    if (!run) throw new SvcError('not_found', `run_id: no run "${id}"; see list_agent_runs`);
    return run;
  };

  const claim = (runId: string): Promise<ClaimResult> =>
    sql.transaction(async () => {
      const found = await queries.get(runId);
      if (!found) throw new SvcError('not_found', `run_id: no run "${runId}"`);
      await writes.lockSession(found.session_id);
      const run = (await queries.get(runId)) ?? found;
      if (run.status !== 'queued')
        throw new SvcError('conflict', `run ${runId} is ${run.status}, not queued`);
      const now = clock.now();
      for (const other of await queries.runningOthers(run.session_id, runId)) {
        if (ownerAlive(other)) return { ok: false, blocking: other };
        // Its process is gone: the run was interrupted (recovery missed it, e.g. a crash just now).
        await writes.interrupt(other.id, `the process running it (pid ${other.pid ?? '?'}) exited`, now);
      }
      if (!(await writes.claimQueued(runId, now, owner))) {
        const current = await requireRun(runId);
        throw new SvcError('conflict', `run ${runId} is ${current.status}, not queued`);
      }
      return { ok: true, run: await requireRun(runId) };
    });

  return {
    owner,
    available: () => ({ ok: true, path: sql.redactedUrl }),
    create: read(async (input) => {
      const now = clock.now();
      const id = deps.ids.next('run');
      const status = input.status ?? 'queued';
      const running = status === 'running';
      await writes.insertRun({
        id,
        session_id: input.session_id,
        parent_run_id: input.parent_run_id ?? null,
        family_session_id: input.family_session_id,
        status,
        agent: input.agent,
        model: input.model ?? null,
        origin: input.origin,
        prompt: input.prompt,
        options: JSON.stringify(input.options ?? {}),
        created_at: now,
        started_at: running ? now : null,
        pid: running ? owner.pid : null,
        host: running ? owner.host : null,
        runner: running ? owner.runner : null,
      });
      await appendTo(id, input.session_id, status === 'queued' ? 'run.queued' : 'run.created', {
        origin: input.origin,
        agent: input.agent,
      });
      return requireRun(id);
    }),
    get: read((id: string) => queries.get(id)),
    require: read(requireRun),
    list: read((filter = {}) => queries.list(filter)),
    count: read((filter = {}) => queries.count(filter)),
    queued: read(queries.queued),
    running: read(queries.running),
    claim: read(claim),
    update: read(async (id, patch) => {
      if (!(await writes.updateRun(id, patch, clock.now())))
        throw new SvcError('not_found', `run_id: no run "${id}"`);
      return requireRun(id);
    }),
    append: read((runId: string, type: string, payload: Record<string, unknown> = {}) =>
      events.append(runId, type, payload),
    ),
    onAppend: events.onAppend,
    events: read(queries.events),
    eventCount: read(queries.eventCount),
    recentEvents: read(queries.recentEvents),
    requestCancel: read(async (id: string) => writes.requestCancel(id, clock.now())),
    cancelRequested: read(queries.cancelRequested),
    delete: read(async (id: string) => {
      await requireRun(id);
      const ids = await queries.subtree(id);
      await writes.deleteRuns(ids);
      for (const runId of ids) events.forget(runId);
      return ids;
    }),
    ownerAlive,
    recover: () => recover(),
    onOrphan(handler) {
      orphanHandler = handler;
    },
    // Not behind the first recovery: the recovery's orphan handler calls it.
    async takeOver(runId, from, record) {
      const run = await queries.get(runId);
      if (run?.status !== 'running') return undefined;
      const previous = from === undefined ? run.runner : from;
      if (run.runner === owner.runner && from === undefined) return run;
      if (!(await writes.takeOverRunning(runId, previous, clock.now(), owner))) return undefined;
      if (record) await appendTo(runId, run.session_id, record.type, record.payload);
      return queries.get(runId);
    },
    async close() {
      closed = true;
      if (janitor) clearInterval(janitor);
      // Only a node that beat has a row to take away.
      if (liveness && first) await liveness.close();
    },
    recovered: async () => [...recoveredRuns],
    queries,
  };
}

/** Appending events (the run's next seq, taken in the database) and the listeners of this ledger. */
function postgresRunEvents(
  deps: Pick<PostgresRunLedgerDeps, 'clock' | 'onListenerError'>,
  queries: Pick<RunQueries, 'sessionOf'>,
  writes: Pick<PostgresRunWrites, 'insertEvent'>,
) {
  const listeners: ((event: RunEvent) => void)[] = [];
  // run id → session id of the runs this ledger appends to (a run never changes session).
  const sessionOfRun = new Map<string, string>();

  async function appendTo(
    runId: string,
    sessionId: string,
    type: string,
    payload: Record<string, unknown>,
  ): Promise<RunEvent> {
    const created_at = deps.clock.now();
    const row = await writes.insertEvent({
      run_id: runId,
      session_id: sessionId,
      type,
      payload: JSON.stringify(payload),
      created_at,
    });
    const event = {
      id: row.id,
      run_id: runId,
      session_id: sessionId,
      seq: row.seq,
      type,
      payload,
      created_at,
    };
    for (const listener of [...listeners]) {
      try {
        listener(event);
      } catch (error) {
        deps.onListenerError?.(error, event);
      }
    }
    return event;
  }

  return {
    appendTo,
    async append(runId: string, type: string, payload: Record<string, unknown>): Promise<RunEvent> {
      let sessionId = sessionOfRun.get(runId);
      if (!sessionId) {
        sessionId = await queries.sessionOf(runId);
        if (!sessionId) throw new SvcError('not_found', `run_id: no run "${runId}"`);
        if (sessionOfRun.size > 1000) sessionOfRun.clear();
        sessionOfRun.set(runId, sessionId);
      }
      return appendTo(runId, sessionId, type, payload);
    },
    onAppend(listener: (event: RunEvent) => void): () => void {
      listeners.push(listener);
      return () => {
        const at = listeners.indexOf(listener);
        if (at >= 0) listeners.splice(at, 1);
      };
    },
    forget(runId: string): void {
      sessionOfRun.delete(runId);
    },
  };
}
