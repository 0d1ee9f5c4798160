/**
 * The durable run ledger: one row per agent run (top-level and sub-agent) and its events (phases,
 * steps, tool calls, permission waits, errors, and whatever tools append through `ctx.event`).
 * Rows are written as the run goes, so a crash loses nothing already written; the next process
 * that opens the ledger marks runs whose owning process is gone `interrupted`.
 *
 * The prompt queue of a session is its `queued` runs, oldest first: every process sees the same
 * queue, and a queued prompt survives a restart.
 * @module
 */
import { hostname } from 'node:os';
import { type FailureReport, SvcError } from '../errors';
import { type Db, groupCommit } from '../store/db';
import { statementCache } from '../store/statement-cache';
import type { Clock, Ids } from '../util/ids';
import { createRunQueries, type RunQueries } from './queries';
import type { AgentRun, RunEvent, RunFilter, RunOptions, RunStatus, RunUsage } from './types';

export type {
  AgentRun,
  FinalRunStatus,
  RunEvent,
  RunFilter,
  RunOptions,
  RunStatus,
  RunUsage,
} from './types';
export { RUN_STATUSES } from './types';

export interface CreateRunInput {
  session_id: string;
  family_session_id: string;
  parent_run_id?: string | null;
  agent: string;
  model?: string | null;
  origin: string;
  prompt: string;
  options?: RunOptions;
  status?: 'queued' | 'running';
}

export interface RunPatch {
  status?: RunStatus;
  model?: string | null;
  reason?: string | null;
  error?: string | null;
  failure?: FailureReport | null;
  steps?: number;
  usage?: RunUsage;
  cost?: number;
  result_message_id?: string | null;
  started_at?: number | null;
  finished_at?: number | null;
}

export type ClaimResult = { ok: true; run: AgentRun } | { ok: false; blocking: AgentRun };

export interface RunLedger {
  /** This process's identity on the rows it owns. */
  readonly owner: { pid: number; host: string; runner: string };
  /** Whether the durable store can be used, and why not. Never throws. */
  available(): { ok: true; path: string } | { ok: false; reason: string };
  create(input: CreateRunInput): AgentRun;
  get(id: string): AgentRun | undefined;
  /** Like get, but a not_found SvcError naming the id. */
  require(id: string): AgentRun;
  list(filter?: RunFilter): AgentRun[];
  count(filter?: Omit<RunFilter, 'limit' | 'offset'>): number;
  /** The session's prompt queue: its queued runs, oldest first. */
  queued(sessionId: string): AgentRun[];
  /** The running run of a session, if any (any process). */
  running(sessionId: string): AgentRun | undefined;
  /**
   * Atomically move a queued run to running for this process, unless another live process
   * already runs one in the same session.
   */
  claim(runId: string): ClaimResult;
  update(id: string, patch: RunPatch): AgentRun;
  /** Append an event; returns it with its per-run sequence number. */
  append(runId: string, type: string, payload?: Record<string, unknown>): RunEvent;
  /**
   * Observe every event this ledger appends (e.g. the finding lifecycle reads `local_shell_finished`).
   * Listeners run synchronously after the row is written; one that throws is logged by the caller's
   * `onListenerError` and never fails the append. Returns the removal.
   */
  onAppend(listener: (event: RunEvent) => void): () => void;
  events(runId: string, options?: { afterSeq?: number; limit?: number; types?: string[] }): RunEvent[];
  eventCount(runId?: string): number;
  recentEvents(options?: { limit?: number; sessionId?: string; type?: string }): RunEvent[];
  requestCancel(id: string): void;
  cancelRequested(id: string): boolean;
  /** Deletes the run, its events and its descendant runs; returns the ids removed. */
  delete(id: string): string[];
  /** True when the row's owning process is alive (this process counts when `mine` says so). */
  ownerAlive(run: AgentRun): boolean;
  /**
   * Marks running runs whose owner is gone `interrupted` (done once per process on first use,
   * and callable again). Returns the runs it marked.
   */
  recover(): AgentRun[];
  /** Runs this ledger marked interrupted since it was created. */
  recovered(): AgentRun[];
  /**
   * The ledger's reads as stored, without the first-use recovery (readouts, other domains'
   * read models): see ./queries.ts.
   */
  readonly queries: RunQueries;
}

export interface RunLedgerDeps {
  db: () => Db;
  dbPath: string;
  clock: Clock;
  ids: Ids;
  /** Identity of the App that owns the rows it runs (unique per App, even in one process). */
  runner: string;
  pid?: number;
  host?: string;
  /** Whether a runner of this process is still live (several Apps can share one process in tests). */
  isLiveRunner?: (runner: string) => boolean;
  onRecovered?: (runs: AgentRun[]) => void;
  /** Runs once after the first recovery (the process reaper: ./process-reaper.ts). */
  afterFirstRecovery?: () => void;
  /** An onAppend listener threw. */
  onListenerError?: (error: unknown, event: RunEvent) => void;
}

export function createRunLedger(deps: RunLedgerDeps): RunLedger {
  const owner = { pid: deps.pid ?? process.pid, host: deps.host ?? hostname(), runner: deps.runner };
  let recoveredRuns: AgentRun[] = [];
  let recoveredOnce = false;

  const rawDb = (): Db => {
    try {
      return deps.db();
    } catch (error) {
      const reason = SvcError.is(error) ? error.message : String(error);
      throw new SvcError(
        'unavailable',
        `run ledger unavailable: ${reason}. Durable runs need a data directory with a database (svc.db): pass --data-dir or set SVC_DATA_DIR to a writable directory`,
        { cause: error },
      );
    }
  };
  const db = (): Db => {
    const handle = rawDb();
    if (!recoveredOnce) {
      recoveredOnce = true;
      recover();
      deps.afterFirstRecovery?.();
    }
    return handle;
  };

  const prepare = statementCache(rawDb);
  const queries = createRunQueries(rawDb);
  const appendListeners: ((event: RunEvent) => void)[] = [];
  // run id → session id of the runs this process appends to (a run never changes session).
  const sessionOfRun = new Map<string, string>();
  const remember = (runId: string, sessionId: string) => {
    if (sessionOfRun.size > 1000) sessionOfRun.clear();
    sessionOfRun.set(runId, sessionId);
  };
  const getWith = (id: string) => queries.get(id);
  const get = (id: string) => {
    db();
    return getWith(id);
  };
  const require = (id: string) => {
    const run = get(id);
    if (!run) throw new SvcError('not_found', `run_id: no run "${id}"; see list_agent_runs`);
    return run;
  };

  const ownerAlive = (run: AgentRun): boolean => {
    if (run.runner === owner.runner) return true;
    if (run.pid === null) return false;
    if (run.host !== owner.host) return true; // another machine: cannot tell, assume alive
    if (run.pid === owner.pid) return run.runner !== null && (deps.isLiveRunner?.(run.runner) ?? false);
    return processAlive(run.pid);
  };

  function recover(): AgentRun[] {
    const orphans = queries.runningAll().filter((run) => !ownerAlive(run));
    if (orphans.length === 0) return [];
    const now = deps.clock.now();
    const marked: AgentRun[] = [];
    for (const run of orphans) {
      const reason = `the process running it (pid ${run.pid ?? '?'}) exited before the run finished`;
      const changed = prepare(
        "UPDATE agent_runs SET status = 'interrupted', reason = ?, finished_at = ?, updated_at = ? WHERE id = ? AND status = 'running'",
      ).run(reason, now, now, run.id).changes;
      if (changed === 0) continue;
      appendWith(run.id, run.session_id, 'run.interrupted', { reason, pid: run.pid });
      marked.push(getWith(run.id)!);
    }
    recoveredRuns = [...recoveredRuns, ...marked];
    if (marked.length) deps.onRecovered?.(marked);
    return marked;
  }

  function appendWith(
    runId: string,
    sessionId: string,
    type: string,
    payload: Record<string, unknown>,
  ): RunEvent {
    groupCommit(rawDb());
    const created_at = deps.clock.now();
    const row = prepare(
      `INSERT INTO agent_run_events (run_id, session_id, seq, type, payload, created_at)
         VALUES (?, ?, (SELECT coalesce(max(seq), 0) + 1 FROM agent_run_events WHERE run_id = ?), ?, ?, ?)
         RETURNING id, seq`,
    ).get(runId, sessionId, runId, type, JSON.stringify(payload), created_at) as { id: number; seq: number };
    const event = {
      id: row.id,
      run_id: runId,
      session_id: sessionId,
      seq: row.seq,
      type,
      payload,
      created_at,
    };
    for (const listener of [...appendListeners]) {
      try {
        listener(event);
      } catch (error) {
        deps.onListenerError?.(error, event);
      }
    }
    return event;
  }

  return {
    owner,
    available() {
      try {
        rawDb();
        return { ok: true, path: deps.dbPath };
      } catch (error) {
        return { ok: false, reason: SvcError.is(error) ? error.message : String(error) };
      }
    },
    create(input) {
      db();
      const now = deps.clock.now();
      const id = deps.ids.next('run');
      const status = input.status ?? 'queued';
      prepare(
        `INSERT INTO agent_runs (id, session_id, parent_run_id, family_session_id, status, agent, model, origin,
             prompt, options, created_at, updated_at, started_at, pid, host, runner)
           VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      ).run(
        id,
        input.session_id,
        input.parent_run_id ?? null,
        input.family_session_id,
        status,
        input.agent,
        input.model ?? null,
        input.origin,
        input.prompt,
        JSON.stringify(input.options ?? {}),
        now,
        now,
        status === 'running' ? now : null,
        status === 'running' ? owner.pid : null,
        status === 'running' ? owner.host : null,
        status === 'running' ? owner.runner : null,
      );
      appendWith(id, input.session_id, status === 'queued' ? 'run.queued' : 'run.created', {
        origin: input.origin,
        agent: input.agent,
      });
      return getWith(id)!;
    },
    get,
    require,
    list(filter = {}) {
      db();
      return queries.list(filter);
    },
    count(filter = {}) {
      db();
      return queries.count(filter);
    },
    queued(sessionId) {
      db();
      return queries.queued(sessionId);
    },
    running(sessionId) {
      db();
      return queries.running(sessionId);
    },
    claim(runId) {
      const handle = db();
      return handle
        .transaction((): ClaimResult => {
          const run = getWith(runId);
          if (!run) throw new SvcError('not_found', `run_id: no run "${runId}"`);
          if (run.status !== 'queued')
            throw new SvcError('conflict', `run ${runId} is ${run.status}, not queued`);
          const others = queries.runningOthers(run.session_id, runId);
          const now = deps.clock.now();
          for (const other of others) {
            if (ownerAlive(other)) return { ok: false, blocking: other };
            // Its process is gone: the run was interrupted (recovery missed it, e.g. a crash just now).
            prepare(
              "UPDATE agent_runs SET status = 'interrupted', reason = ?, finished_at = ?, updated_at = ? WHERE id = ?",
            ).run(`the process running it (pid ${other.pid ?? '?'}) exited`, now, now, other.id);
          }
          prepare(
            "UPDATE agent_runs SET status = 'running', started_at = ?, updated_at = ?, pid = ?, host = ?, runner = ? WHERE id = ?",
          ).run(now, now, owner.pid, owner.host, owner.runner, runId);
          return { ok: true, run: getWith(runId)! };
        })
        .immediate();
    },
    update(id, patch) {
      groupCommit(db());
      const sets: string[] = [];
      const params: unknown[] = [];
      const set = (column: string, value: unknown) => {
        sets.push(`${column} = ?`);
        params.push(value);
      };
      if (patch.status !== undefined) set('status', patch.status);
      if (patch.model !== undefined) set('model', patch.model);
      if (patch.reason !== undefined) set('reason', patch.reason);
      if (patch.error !== undefined) set('error', patch.error);
      if (patch.failure !== undefined) set('failure', patch.failure ? JSON.stringify(patch.failure) : null);
      if (patch.steps !== undefined) set('steps', patch.steps);
      if (patch.usage) {
        set('input_tokens', patch.usage.input_tokens);
        set('output_tokens', patch.usage.output_tokens);
        set('reasoning_tokens', patch.usage.reasoning_tokens);
        set('cached_input_tokens', patch.usage.cached_input_tokens);
      }
      if (patch.cost !== undefined) set('cost', patch.cost);
      if (patch.result_message_id !== undefined) set('result_message_id', patch.result_message_id);
      if (patch.started_at !== undefined) set('started_at', patch.started_at);
      if (patch.finished_at !== undefined) set('finished_at', patch.finished_at);
      set('updated_at', deps.clock.now());
      const changed = prepare(`UPDATE agent_runs SET ${sets.join(', ')} WHERE id = ?`).run(
        ...params,
        id,
      ).changes;
      if (changed === 0) throw new SvcError('not_found', `run_id: no run "${id}"`);
      return getWith(id)!;
    },
    append(runId, type, payload = {}) {
      db();
      let sessionId = sessionOfRun.get(runId);
      if (!sessionId) {
        sessionId = queries.sessionOf(runId);
        if (!sessionId) throw new SvcError('not_found', `run_id: no run "${runId}"`);
        remember(runId, sessionId);
      }
      return appendWith(runId, sessionId, type, payload);
    },
    onAppend(listener) {
      appendListeners.push(listener);
      return () => {
        const at = appendListeners.indexOf(listener);
        if (at >= 0) appendListeners.splice(at, 1);
      };
    },
    events(runId, options) {
      db();
      return queries.events(runId, options);
    },
    eventCount(runId) {
      db();
      return queries.eventCount(runId);
    },
    recentEvents(options) {
      db();
      return queries.recentEvents(options);
    },
    requestCancel(id) {
      db();
      prepare('UPDATE agent_runs SET cancel_requested = 1, updated_at = ? WHERE id = ?').run(
        deps.clock.now(),
        id,
      );
    },
    cancelRequested(id) {
      db();
      return queries.cancelRequested(id);
    },
    delete(id) {
      const handle = db();
      require(id);
      const ids = queries.subtree(id);
      const remove = prepare('DELETE FROM agent_runs WHERE id = ?');
      handle.transaction(() => {
        for (const runId of ids) remove.run(runId);
      })();
      for (const runId of ids) sessionOfRun.delete(runId);
      return ids;
    },
    ownerAlive,
    recover: () => {
      rawDb();
      return recover();
    },
    recovered: () => [...recoveredRuns],
    queries,
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
