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
 *   row is written, on the node that appended;
 * - `appendAlongside` writes a compat ledger row and the request's run event in one statement (no
 *   BEGIN, COMMIT nor run read around them: the round trips are what a PostgreSQL write costs).
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
import type { EventBus } from '../events/bus';
import type { SqlClient } from '../store/postgres/client';
import { recentMap } from '../util/recent-map';
import { followedRuns } from './followed-runs';
import { firstRunEvent, newRunRow } from './new-run';
import { appendAnnounced, followingWrites, updateAndAppend, updateAndAppendAfter } from './pg-run-announced';
import { postgresCreateClaimed } from './pg-run-create-claimed';
import { insertRunWithEvent } from './pg-run-create-repository';
import { createPostgresRunQueries } from './pg-run-queries';
import { createPostgresRunRecovery } from './pg-run-recovery';
import { createPostgresRunWrites, type PostgresRunWrites } from './pg-run-write-repository';
import type { RunQueries } from './queries';
import type { RunLedger, RunLedgerDeps } from './run-ledger';
import { runStartedPayload } from './run-started';
import type { ClaimOptions, ClaimResult } from './run-writes';
import type { AgentRun, RunEvent } from './types';

export interface PostgresRunLedgerDeps extends Omit<RunLedgerDeps, 'db' | 'dbPath'> {
  sql: SqlClient;
  /** The session event bus a write's session events join (./pg-run-announced.ts); none: never. */
  bus?: Pick<EventBus, 'publish' | 'joinAll'>;
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
  const events = postgresRunEvents(deps, queries, writes);
  const { appendTo } = events;
  const recovery = createPostgresRunRecovery({ deps, owner, queries, writes, appendTo });
  const { ownerAlive, ready } = recovery;
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

  const claim = postgresClaim({ sql, clock, owner, queries, writes, events, ownerAlive });
  return {
    owner,
    available: () => ({ ok: true, path: sql.redactedUrl }),
    create: read(async (input, riding) => {
      const now = clock.now();
      const row = newRunRow(input, deps.ids.next('run'), now, owner);
      const id = row.id;
      // The run and its first event in one statement; the session's held INSERT, when given,
      // first in it (./pg-run-create-repository.ts).
      const first = firstRunEvent(row);
      const firstEvent = { type: first.type, payload: JSON.stringify(first.payload), created_at: now };
      const created = await insertRunWithEvent(sql, row, firstEvent, riding);
      events.known(id, input.session_id);
      events.announce({
        ...created.event,
        run_id: id,
        session_id: input.session_id,
        ...firstEvent,
        payload: first.payload,
      });
      // An event leaves the run's row as it was inserted.
      return created.run;
    }),
    createClaimed: read(postgresCreateClaimed({ sql, clock, ids: deps.ids, owner, events, bus: deps.bus })),
    get: read((id: string) => queries.get(id)),
    require: read(requireRun),
    list: read((filter = {}) => queries.list(filter)),
    count: read((filter = {}) => queries.count(filter)),
    queued: read(queries.queued),
    running: read(queries.running),
    claim: read((runId: string, options?: ClaimOptions) => claim(runId, options)),
    update: read(async (id, patch) => {
      const run = await writes.updateRunRow(id, patch, clock.now());
      if (!run) throw new SvcError('not_found', `run_id: no run "${id}"`);
      return run;
    }),
    updateAndAppend: read(updateAndAppend({ clock, writes, events, sql, bus: deps.bus })),
    updateAndAppendAfter: updateAndAppendAfter({ sql, clock, bus: deps.bus, writes, events, ready }),
    ...(deps.bus
      ? { appendAnnounced: appendAnnounced({ sql, clock, bus: deps.bus, writes, events, ready }) }
      : {}),
    ...followingWrites(events),
    append: read((runId: string, type: string, payload: Record<string, unknown> = {}) =>
      events.append(runId, type, payload),
    ),
    appendAlongside: read(async (runId, type, payload, alongside) => {
      const created_at = clock.now();
      const write = () =>
        writes.insertEventAlongside(runId, { type, payload: JSON.stringify(payload), created_at }, alongside);
      // Inside a transaction, a savepoint of it (sent with the statement): a failed write leaves
      // the transaction usable, as the savepoint of the callers' two writes did. A gating write
      // skips where it would fail on its data: no savepoint (one statement fewer, p-pgcompat2).
      const written = await (sql.inTransaction() && !alongside.gates ? sql.transaction(write) : write());
      if (!written) return undefined;
      const { session_id, ...ids } = written;
      events.known(runId, session_id);
      const event = { ...ids, run_id: runId, session_id, type, payload, created_at };
      events.announce(event);
      return event;
    }),
    appendList: read(async (runId, list, riding) => {
      const sessionId = await events.sessionOfRun(runId);
      const now = clock.now();
      const stored = list.map((e) => ({ type: e.type, payload: e.payload, created_at: e.created_at ?? now }));
      const written = await writes.insertEventList(
        runId,
        sessionId,
        stored.map((e) => ({ ...e, payload: JSON.stringify(e.payload) })),
        riding,
      );
      const appended: RunEvent[] = stored.map((e, i) => ({
        id: written.events[i].id,
        run_id: runId,
        session_id: sessionId,
        seq: written.events[i].seq,
        ...e,
      }));
      for (const event of appended) events.announce(event);
      return { events: appended, ridingId: written.ridingId };
    }),
    onAppend: events.onAppend,
    takeAppended: events.takeAppended,
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
    // After the first-use recovery (which starts the node's heartbeat): a node may call it to start.
    recover: read(recovery.recover),
    onOrphan: recovery.onOrphan,
    othersAlive: recovery.othersAlive,
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
    onStranded: recovery.onStranded,
    // Not behind the first recovery either: the recovery's stranded handler calls it.
    requeue: (runId, putBack) =>
      sql.transaction(async () => {
        const found = await queries.get(runId);
        if (!found) return false;
        await writes.lockSession(found.session_id);
        const run = await queries.get(runId);
        if (!run) return false;
        const record = await putBack(run);
        if (record === false) return false;
        if (record) await appendTo(run.id, run.session_id, record.type, record.payload);
        return true;
      }),
    close: recovery.close,
    recovered: async () => recovery.recovered(),
    queries,
  };
}

/**
 * `claim` (see the module's notes): in one transaction under the session's advisory lock, the run
 * moved to running unless another live run holds the session.
 */
function postgresClaim(ctx: {
  sql: SqlClient;
  clock: RunLedgerDeps['clock'];
  owner: RunLedger['owner'];
  queries: RunQueries;
  writes: PostgresRunWrites;
  events: ReturnType<typeof postgresRunEvents>;
  ownerAlive: (run: AgentRun) => boolean;
}): (runId: string, options?: ClaimOptions) => Promise<ClaimResult> {
  const { sql, clock, owner, queries, writes, events, ownerAlive } = ctx;
  const underLock = (runId: string): Promise<ClaimResult> =>
    sql.transaction(async () => {
      // The run's session: known when this ledger created the run or appended to it (a run never
      // changes session), else read.
      let sessionId = events.sessionOf(runId);
      if (!sessionId) {
        const found = await queries.get(runId);
        if (!found) throw new SvcError('not_found', `run_id: no run "${runId}"`);
        sessionId = found.session_id;
      }
      await writes.lockSession(sessionId);
      // The run is not read before its claim: the conditional UPDATE below tells a run that is
      // not queued (any more), and only then, or when another run blocks, is the run read, so
      // the answers are those of reading it first (a throw rolls back the interruptions).
      const current = async (): Promise<AgentRun> => {
        const run = await queries.get(runId);
        if (!run) throw new SvcError('not_found', `run_id: no run "${runId}"`);
        if (run.status !== 'queued')
          throw new SvcError('conflict', `run ${runId} is ${run.status}, not queued`);
        return run;
      };
      const now = clock.now();
      for (const other of await queries.runningOthers(sessionId, runId)) {
        if (ownerAlive(other)) {
          await current();
          return { ok: false, blocking: other };
        }
        // Its process is gone: the run was interrupted (recovery missed it, e.g. a crash just now).
        await writes.interrupt(other.id, `the process running it (pid ${other.pid ?? '?'}) exited`, now);
      }
      const claimed = await writes.claimQueuedRun(runId, now, owner);
      if (!claimed) {
        await current();
        throw new SvcError('conflict', `run ${runId} is queued, not claimed`);
      }
      return { ok: true, run: claimed };
    });
  return async (runId: string, options?: ClaimOptions): Promise<ClaimResult> => {
    // A run of a known session with nothing in its way is claimed in one statement (with its
    // run.started event, and the event after it, when asked); anything else (a live or dead run
    // holding the session, a run not queued) takes the path above, which reads why under the
    // same lock.
    const sessionId = events.sessionOf(runId);
    if (sessionId && options?.started) {
      const now = clock.now();
      const after = options.next;
      const next = after && { ...after, payload: JSON.stringify(after.payload) };
      // Another domain's insert and its event, only in this run's claim (ClaimAlongside).
      const along = options.alongside?.runId === runId ? options.alongside : undefined;
      const alongside = along && {
        write: along.write,
        type: along.event.type,
        payload: JSON.stringify(along.event.payload),
      };
      const claimed = await writes.claimIfFreeStarted(runId, sessionId, now, owner, next, alongside);
      if (claimed) {
        const { run } = claimed;
        const payload = runStartedPayload(run);
        const started = {
          ...claimed.event,
          run_id: runId,
          session_id: sessionId,
          type: 'run.started',
          payload,
          created_at: now,
        };
        events.announce(started);
        // Each event announced in its seq's order: run.started, `next`, the alongside's.
        let followed: RunEvent | undefined;
        if (after && claimed.next) {
          followed = {
            id: claimed.next.id,
            run_id: runId,
            session_id: sessionId,
            seq: claimed.next.seq,
            type: after.type,
            payload: after.payload,
            created_at: now,
          };
          events.announce(followed);
        }
        let also: RunEvent | undefined;
        if (along && claimed.alongside) {
          const event: RunEvent = {
            ...claimed.alongside,
            run_id: runId,
            session_id: sessionId,
            type: along.event.type,
            payload: along.event.payload,
            created_at: now,
          };
          events.announce(event);
          along.written(event);
          also = event;
        }
        return {
          ok: true,
          run,
          started,
          ...(followed ? { next: followed } : {}),
          ...(also ? { alongside: also } : {}),
        };
      }
    } else if (sessionId) {
      const claimed = await writes.claimIfFree(runId, sessionId, clock.now(), owner);
      if (claimed) return { ok: true, run: claimed };
    }
    return underLock(runId);
  };
}

/** Appending events (the run's next seq, taken in the database) and the listeners of this ledger. */
function postgresRunEvents(
  deps: Pick<PostgresRunLedgerDeps, 'clock' | 'onListenerError'>,
  queries: Pick<RunQueries, 'sessionOf'>,
  writes: Pick<PostgresRunWrites, 'insertEvent'>,
) {
  const listeners: ((event: RunEvent) => void)[] = [];
  // run id → session id of the runs this ledger appends to (a run never changes session): the last
  // 1,000 remembered, none in flight forgotten at the bound (../util/recent-map.ts, p-deopt).
  const sessionOfRun = recentMap<string>(1000);
  const followed = followedRuns();

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
    announce(event);
    return event;
  }

  /** Runs this ledger's listeners for an event just written. */
  function announce(event: RunEvent): void {
    followed.follow(event);
    for (const listener of [...listeners]) {
      try {
        listener(event);
      } catch (error) {
        deps.onListenerError?.(error, event);
      }
    }
  }

  const known = (runId: string, sessionId: string) => sessionOfRun.set(runId, sessionId);
  /** The run's session: remembered, else read (not_found: no such run). */
  async function runSession(runId: string): Promise<string> {
    let sessionId = sessionOfRun.get(runId);
    if (!sessionId) {
      sessionId = await queries.sessionOf(runId);
      if (!sessionId) throw new SvcError('not_found', `run_id: no run "${runId}"`);
      known(runId, sessionId);
    }
    return sessionId;
  }

  return {
    appendTo,
    announce,
    /** The session of a run this ledger created or appended to, if it remembers it. */
    sessionOf: (runId: string): string | undefined => sessionOfRun.get(runId),
    /** Remembers a run's session (it created the run). */
    known,
    sessionOfRun: runSession,
    async append(runId: string, type: string, payload: Record<string, unknown>): Promise<RunEvent> {
      return appendTo(runId, await runSession(runId), type, payload);
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
      followed.forget(runId);
    },
    takeAppended: followed.take,
  };
}
