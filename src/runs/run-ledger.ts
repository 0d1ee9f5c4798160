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
import { SvcError } from '../errors';
import type { Db } from '../store/db';
import type { FollowingWrite, PrecedingWrite, RidingInsert, TrailingInsert } from '../store/preceding-write';
import { statementCache } from '../store/statement-cache';
import type { Clock, Ids } from '../util/ids';
import { asyncRunQueries, createSqliteRunQueries, type RunQueries } from './queries';
import { createRunEvents } from './run-events';
import { createRunRecovery } from './run-recovery';
import { createRunWrites } from './run-repository';
import {
  asyncWriteOps,
  type ClaimOptions,
  type ClaimResult,
  type CreateRunInput,
  createRunWriteOps,
  type RunPatch,
} from './run-writes';
import type {
  AgentRun,
  AlongsideWrite,
  AppendNow,
  ClaimedCreate,
  FinishAlongside,
  FinishFirst,
  RunEvent,
  RunFilter,
  SessionAnnounce,
} from './types';

export { isLiveRunner, processAlive, registerRunner } from './run-recovery';
export type { ClaimOptions, ClaimResult, CreateRunInput, RunPatch } from './run-writes';

export type {
  AgentRun,
  ClaimedCreate,
  ClaimedRow,
  FinalRunStatus,
  RunEvent,
  RunFilter,
  RunOptions,
  RunStatus,
  RunUsage,
  SessionAnnounce,
} from './types';
export { RUN_STATUSES } from './types';

export interface RunLedger extends AppendNow {
  /** This process's identity on the rows it owns. */
  readonly owner: { pid: number; host: string; runner: string };
  /** Whether the durable store can be used, and why not. Never throws. */
  available(): { ok: true; path: string } | { ok: false; reason: string };
  /**
   * `riding`: another domain's insert that goes first in the run's INSERT statement (PostgreSQL:
   * a new session's, `SessionStore.createHeld`); a ledger without it (SQLite) refuses one.
   */
  create(input: CreateRunInput, riding?: RidingInsert): Promise<AgentRun>;
  /**
   * A new session's first run, inserted already claimed by this process with `riding` (the
   * session's held INSERT) in one statement (PostgreSQL only, p-pgclaimed): the run `running`, its
   * events run.queued, run.started and `claim.next`, and `claim.alongside(runId)`'s insert and
   * event, as `create` then `claim(id, { started: true, next, alongside })` leave them. Only for a
   * session inserted by that very statement: no other run can hold it, so there is nothing to check.
   */
  createClaimed?(
    input: CreateRunInput,
    riding: RidingInsert,
    claim: ClaimedCreate,
  ): Promise<
    Extract<ClaimResult, { ok: true }> & {
      started: RunEvent;
      next: RunEvent;
      /** Its session events went in its statement (`ClaimedCreate.announce`). */
      announced?: boolean;
      /** Its statement committed by itself (`SqlClient.alone`): a failure after it leaves the run. */
      alone?: boolean;
    }
  >;
  get(id: string): Promise<AgentRun | undefined>;
  /** Like get, but a not_found SvcError naming the id. */
  require(id: string): Promise<AgentRun>;
  list(filter?: RunFilter): Promise<AgentRun[]>;
  count(filter?: Omit<RunFilter, 'limit' | 'offset'>): Promise<number>;
  /** The session's prompt queue: its queued runs, oldest first. */
  queued(sessionId: string): Promise<AgentRun[]>;
  /** The running run of a session, if any (any process). */
  running(sessionId: string): Promise<AgentRun | undefined>;
  /**
   * Atomically move a queued run to running for this process, unless another live process
   * already runs one in the same session. `started`: write the run's `run.started` event
   * (`{ agent, origin, pid, options }`) with the claim when the ledger can; the answer's `started`
   * says whether it did. `next` (with `started`): the event that follows, in the same statement
   * where the ledger can (PostgreSQL); the answer's `next` says whether it did.
   */
  claim(runId: string, options?: ClaimOptions): Promise<ClaimResult>;
  update(id: string, patch: RunPatch): Promise<AgentRun>;
  /**
   * SQLite: `update` answering only whether a cancel was requested (what a step's end reads), not
   * the whole row; `updateQueued` the row and whether its session has queued runs, in the same
   * statement (a finish's, in its transaction: as a read after its commit, p-sqlcpu3). Absent: `update`.
   */
  updateCancel?(id: string, patch: RunPatch): Promise<{ cancel_requested: boolean }>;
  /**
   * SQLite: `update` of a run's totals (steps, usage, cost) held while the transaction lasts: a
   * run's last step end, whose finish writes them again (src/runs/held-run-totals.ts). Absent:
   * `updateCancel` or `update`.
   */
  holdTotals?(id: string, patch: RunPatch): Promise<void>;
  updateQueued?(id: string, patch: RunPatch): Promise<{ run: AgentRun; queued: boolean }>;
  /**
   * `update` and then `append` to the same run written together, both or neither (PostgreSQL:
   * one statement). Absent: the caller makes the two calls.
   */
  updateAndAppend?(
    id: string,
    patch: RunPatch,
    type: string,
    payload: Record<string, unknown>,
    /**
     * `queue`: also whether the run's session has queued runs, read in the same statement under
     * the session's claim lock (PostgreSQL), as a read after the write's commit would tell: a claim
     * on another node that found this run running committed its queued run before (p-pgcompat).
     */
    options?: {
      queue?: boolean;
      /** Another domain's write and its run event after this one (a compat request's end, p-pgcompat6). */
      alongside?: FinishAlongside;
      /**
       * Session events that follow the write (a finish's `run.finished` and idle state,
       * p-finishjoin): appended last in the same statement, and only when it wrote, where the bus
       * keeps their order (`EventBus.joinAll` with `next`: the statement may wait for the bus's
       * append in flight). `deliver`: they were written; the caller calls it once its own effects
       * are done (the bus delivers them then, and holds its queue until it). Absent: not written,
       * the caller publishes them.
       */
      announce?: SessionAnnounce;
      /**
       * The run's last step end, written first in the same statement (p-pglast): all or nothing
       * with the finish; `written` is told once it was (a failure: neither was written).
       */
      first?: FinishFirst;
    },
  ): Promise<{ run: AgentRun; event: RunEvent; queued?: boolean; deliver?: () => void }>;
  /**
   * PostgreSQL: `before` (another domain's write: a step end's messages and session usage), then
   * `updateAndAppend`, in one statement: all or nothing, no transaction needed around them. Answers
   * `before`'s result too. `before`'s rows missing: its `read` throws, nothing written; the run
   * missing: not_found, nothing written. Absent (SQLite): the caller writes them one by one.
   */
  updateAndAppendAfter?<T>(
    id: string,
    patch: RunPatch,
    type: string,
    payload: Record<string, unknown>,
    before: PrecedingWrite<T>,
    /**
     * Session events that follow the write (a step end's `message.completed` and
     * `context.usage`): appended last in the same statement, and only when it wrote, where the
     * bus can keep their order (`EventBus.joinAll`); `announced` says whether they were (else the
     * caller publishes them once it answered, as before).
     */
    announce?: SessionAnnounce,
    /**
     * Another domain's insert (the step's `model_calls` row, p-pgfirst), written in the same
     * statement whether or not the run's row is; told `wrote()` once the statement answered (a
     * failed statement wrote nothing of it).
     */
    riding?: TrailingInsert,
  ): Promise<{ run: AgentRun; event: RunEvent; before: T; announced: boolean }>;
  /**
   * PostgreSQL: `append`, and a session event that goes with it (a tool's `tool.started`,
   * `tool.finished`) published on the bus, in one statement where the bus can keep its order
   * (`EventBus.joinAll`), else published, then appended, as the caller would have. The session
   * event is written whether or not the run exists (then not_found, as `append`'s); a failed
   * statement wrote neither, and the event is published after it as before. Absent (SQLite): the
   * caller publishes and appends.
   */
  appendAnnounced?(
    runId: string,
    type: string,
    payload: Record<string, unknown>,
    announce: { sessionId: string; type: string; payload: Record<string, unknown> },
    /**
     * Another domain's insert (the step's `model_calls` row before its tool's `tool.started`,
     * p-pgfirst), written in the same statement whether or not the run exists; told `wrote()` once
     * the statement answered. Not told (the bus could not join, the statement failed): the caller
     * writes it.
     */
    riding?: TrailingInsert,
  ): Promise<RunEvent>;
  /**
   * PostgreSQL: `append` of an event held since `created_at`, as a write that rides in another
   * domain's statement after that statement's own rows (`write`; p-pgstep6: a step's `phase` in its
   * assistant message's INSERT). Once the statement answered, `written()` is the event as stored
   * (announced to `onAppend` like any append), or undefined when it was not written (the other
   * write's row or the run missing, the statement failed or never sent): the caller appends it
   * then. Absent (SQLite): the caller appends.
   */
  followingEvent?(
    runId: string,
    type: string,
    payload: Record<string, unknown>,
    created_at: number,
  ): { write: FollowingWrite; written(): RunEvent | undefined };
  /**
   * PostgreSQL: `followingEvent` for several events of the run, appended in their order
   * (consecutive seqs, each at its own `created_at`; p-pgride: a step's `phase` and `tool.started`).
   * `written()`: the events as stored, announced in their order, or undefined (none written).
   * `riding` (with `at`; p-pgprep3: the prompt stack row) is inserted whatever the gate; `ridingId()`.
   */
  followingEvents?(
    runId: string,
    events: readonly { type: string; payload: Record<string, unknown>; created_at: number }[],
    riding?: RidingInsert,
  ): { write: FollowingWrite; written(): RunEvent[] | undefined; ridingId(): number | undefined };
  /**
   * SQLite: a run's events of one type (`tool.finished`) as stored, when this process appended
   * every event of the run (./run-events.ts `takeAppended`); undefined: read them. Once per run.
   */
  takeAppended?(runId: string, type: string): RunEvent[] | undefined;
  /**
   * PostgreSQL: `alongside` (a compat ledger row's insert or finish) and, when the run exists,
   * `append` to it, in one statement: both or neither, one round trip instead of a transaction of
   * four or five statements (inside a transaction, in a savepoint of it: a failure leaves the
   * transaction usable; a gating write, `AlongsideWrite.gates`, without one). Undefined: no such
   * run (`alongside` is written), or a gating write skipped (neither is written). Absent (SQLite,
   * where a transaction costs no round trip): the caller writes the row and appends.
   */
  appendAlongside?(
    runId: string,
    type: string,
    payload: Record<string, unknown>,
    alongside: AlongsideWrite,
  ): Promise<RunEvent | undefined>;
  /**
   * PostgreSQL: `riding` (another domain's insert: a run's prompt stack row), then `events`
   * appended to the run in their order (consecutive seqs, as `append` one after another; each at
   * its own `created_at`, else now), in one statement: all or nothing, one round trip instead of
   * one per write. Answers the events as stored and the riding insert's id. Absent (SQLite, where
   * the writes of a stretch share one commit anyway): the caller appends them one by one.
   */
  appendList?(
    runId: string,
    events: readonly { type: string; payload: Record<string, unknown>; created_at?: number }[],
    riding?: RidingInsert,
  ): Promise<{ events: RunEvent[]; ridingId?: number }>;
  /** Append an event; returns it with its per-run sequence number. */
  append(runId: string, type: string, payload?: Record<string, unknown>): Promise<RunEvent>;
  /**
   * Observe every event this ledger appends (e.g. the finding lifecycle reads `local_shell_finished`).
   * Listeners run synchronously after the row is written; one that throws is logged by the caller's
   * `onListenerError` and never fails the append. Returns the removal.
   */
  onAppend(listener: (event: RunEvent) => void): () => void;
  events(
    runId: string,
    options?: { afterSeq?: number; limit?: number; types?: string[] },
  ): Promise<RunEvent[]>;
  eventCount(runId?: string): Promise<number>;
  recentEvents(options?: { limit?: number; sessionId?: string; type?: string }): Promise<RunEvent[]>;
  requestCancel(id: string): Promise<void>;
  cancelRequested(id: string): Promise<boolean>;
  /** Deletes the run, its events and its descendant runs; returns the ids removed. */
  delete(id: string): Promise<string[]>;
  /** True when the row's owning process is alive (this process counts when `mine` says so). */
  ownerAlive(run: AgentRun): boolean;
  /**
   * Marks running runs whose owner is gone `interrupted` (done once per process on first use,
   * and callable again). Returns the runs it marked.
   */
  recover(): Promise<AgentRun[]>;
  /**
   * PostgreSQL: a running run whose node died becomes this node's (its runner, host and pid), to
   * be resumed here (issue 19); with `from`, only while that runner still owns it (of several
   * nodes taking over one run exactly one gets it), and `record` appended to its events when it
   * is (callable from the recovery itself). Undefined when not taken.
   */
  takeOver?(
    runId: string,
    from?: string | null,
    record?: { type: string; payload: Record<string, unknown> },
  ): Promise<AgentRun | undefined>;
  /**
   * PostgreSQL: who may take over a running run whose node is gone before the recovery marks it
   * interrupted (the durable engine); true when it did.
   */
  onOrphan?(handler: (run: AgentRun) => Promise<boolean>): void;
  /**
   * PostgreSQL: who looks, after the orphans of each recovery, for queued runs left on a node that
   * is gone (the durable engine: a workflow its queue gave a node that died before its claim).
   * `gone(node, since)`: whether the node of runner id `node` is gone, by the rule the recovery
   * applies to a run's owner (a dead process on this machine, a stale heartbeat on another); a node
   * with no heartbeat row counts as gone only for work it was given before `since` is older than
   * `node_stale_ms` (a node beats at once when it starts).
   */
  onStranded?(handler: (gone: (node: string, since: number | undefined) => boolean) => Promise<void>): void;
  /**
   * PostgreSQL: put back a run's durable workflow whose node is gone (an adoption, or a run it was
   * given and never took), exactly once cluster-wide: under the lock the claims of the run's
   * session take (so no claim and no other node's `requeue` of it runs meanwhile), `putBack`
   * reads the run as stored now, checks and puts it back; its answer is appended to the run's
   * events (null: put back, nothing to record; false: not put back). True when it was put back
   * here (callable from the recovery).
   */
  requeue?(
    runId: string,
    putBack: (run: AgentRun) => Promise<{ type: string; payload: Record<string, unknown> } | null | false>,
  ): Promise<boolean>;
  /**
   * PostgreSQL: whether another node beat within `node_stale_ms`, read now (a node stopped cleanly
   * hands its durable runs over to a live one, else interrupts them).
   */
  othersAlive?(): Promise<boolean>;
  /** The ledger stops its background work (PostgreSQL: the node's heartbeat, its row removed). */
  close?(): Promise<void>;
  /** Runs this ledger marked interrupted since it was created. */
  recovered(): Promise<AgentRun[]>;
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
      recovery.recover();
      deps.afterFirstRecovery?.();
    }
    return handle;
  };

  const queries = createSqliteRunQueries(rawDb);
  const writes = createRunWrites(statementCache(rawDb), (fn) => rawDb().transaction(fn)());
  const events = createRunEvents({
    rawDb,
    clock: deps.clock,
    queries,
    writes,
    onListenerError: deps.onListenerError,
  });
  const recovery = createRunRecovery({
    owner,
    clock: deps.clock,
    queries,
    writes,
    appendEvent: events.appendTo,
    isLiveRunner: deps.isLiveRunner,
    onRecovered: deps.onRecovered,
  });
  const get = async (id: string) => {
    db();
    return queries.get(id);
  };
  const requireNow = (id: string) => {
    db();
    const run = queries.get(id);
    if (!run) throw new SvcError('not_found', `run_id: no run "${id}"; see list_agent_runs`);
    return run;
  };
  const writeOps = createRunWriteOps({
    db,
    clock: deps.clock,
    ids: deps.ids,
    owner,
    queries,
    writes,
    events,
    ownerAlive: recovery.ownerAlive,
    require: requireNow,
  });
  /** A read after the first-use recovery. */
  const read =
    <A extends unknown[], R>(fn: (...args: A) => R) =>
    // No await before `fn`: on SQLite the statement runs when the method is called, so a caller
    // that does not wait (a sync event callback) still writes in call order.
    async (...args: A): Promise<R> => {
      db();
      return fn(...args);
    };

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
    // The SQLite writes stay synchronous inside: each method has run its statements when it returns.
    create: async (input, riding) => {
      if (riding) throw new Error('runs.create: this ledger takes no riding insert');
      return writeOps.create(input);
    },
    ...asyncWriteOps(writeOps),
    get,
    require: async (id) => requireNow(id),
    list: read((filter: RunFilter = {}) => queries.list(filter)),
    count: read((filter: Omit<RunFilter, 'limit' | 'offset'> = {}) => queries.count(filter)),
    queued: read(queries.queued),
    running: read(queries.running),
    // After the first-use recovery (`db()` answers a handle), as `read`; `appendNow` with no promise.
    append: async (runId, type, payload = {}) => db() && events.append(runId, type, payload),
    appendNow: (runId, type, payload = {}, created_at) =>
      db() && events.append(runId, type, payload, created_at),
    beforeNextAppend: events.beforeNext,
    onAppend: events.onAppend,
    takeAppended: events.takeAppended,
    events: read(queries.events),
    eventCount: read(queries.eventCount),
    recentEvents: read(queries.recentEvents),
    cancelRequested: read(queries.cancelRequested),
    ownerAlive: recovery.ownerAlive,
    recover: async () => {
      rawDb();
      return recovery.recover();
    },
    recovered: async () => recovery.recovered(),
    queries: asyncRunQueries(queries),
  };
}
