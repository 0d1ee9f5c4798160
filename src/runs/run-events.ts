/**
 * The ledger's events: appending one (with its per-run sequence number) and the listeners that
 * observe every append.
 * @module
 */
import { SvcError } from '../errors';
import { type Db, groupCommit, transactionMemo } from '../store/db';
import { type HeldRows, heldRows } from '../store/held-rows';
import type { Clock } from '../util/ids';
import { recentMap } from '../util/recent-map';
import { followedRuns } from './followed-runs';
import type { SqliteRunQueries } from './queries';
import type { SqliteRunWrites } from './run-repository';
import type { RunEvent } from './types';

export interface RunEventsDeps {
  /** The handle without the first-use recovery (appends happen during recovery). */
  rawDb: () => Db;
  clock: Clock;
  queries: Pick<SqliteRunQueries, 'sessionOf'>;
  writes: Pick<SqliteRunWrites, 'insertEvent' | 'insertEventAt'>;
  onListenerError?: (error: unknown, event: RunEvent) => void;
}

export interface RunEvents {
  /**
   * Appends to a run whose session is known. `seq`: the run's next seq as the caller knows it (the
   * first event of a run it just inserted: 1), inserted as a plain value; should another writer's
   * event hold it already (the unique `(run_id, seq)`), the append reads the highest seq instead.
   */
  appendTo(
    runId: string,
    sessionId: string,
    type: string,
    payload: Record<string, unknown>,
    seq?: number,
    created_at?: number,
  ): RunEvent;
  /** Appends to a run, looking its session up (cached per run); at `created_at`, else now. */
  append(runId: string, type: string, payload: Record<string, unknown>, created_at?: number): RunEvent;
  /** `RunLedger.beforeNextAppend`. */
  beforeNext(runId: string, write: (() => void) | undefined): void;
  onAppend(listener: (event: RunEvent) => void): () => void;
  /**
   * The run's row was just inserted by this connection (its INSERT succeeded): in the transaction
   * open now, if any, no event of the run exists and none but this ledger's appends can come
   * until it ends, so its first event's seq, 1, is known: that append is held like the next ones
   * (../store/held-rows.ts), no INSERT of its own (p-runev Left 1). Outside a transaction: nothing.
   */
  inserted(runId: string): void;
  /** Drops the cached session of a deleted run. */
  forget(runId: string): void;
  /** The session of a run this process holds the row of (a claimed run): `append` need not look it up. */
  known(runId: string, sessionId: string): void;
  /**
   * The run's events of a kept type (`tool.finished`, ./followed-runs.ts) as stored, when this
   * process appended every event of the run so far (seq 1 on, no gap); undefined otherwise (read
   * them). Forgets the run.
   */
  takeAppended(runId: string, type: string): RunEvent[] | undefined;
}

/**
 * The memo's owner (`transactionMemo`, ../store/transaction-memo.ts): run id → its next seq,
 * while the transaction that appended its last event lasts. No other writer appends until that
 * transaction ends (BEGIN IMMEDIATE), so its next appends insert the number instead of reading
 * the run's highest seq again. One per module, not per ledger: two ledgers on one handle share it.
 */
const nextSeqs = {};
const RUN_EVENT_COLUMNS = ['run_id', 'session_id', 'seq', 'type', 'payload', 'created_at'] as const;

export function createRunEvents(deps: RunEventsDeps): RunEvents {
  // Replaced, never changed in place (copy on write): an append iterates the array it started
  // with, so a listener added or removed meanwhile counts from the next append, with no copy made
  // per append (p-bus).
  let appendListeners: readonly ((event: RunEvent) => void)[] = [];
  // run id → session id of the runs this process appends to (a run never changes session): the
  // last 1,000 remembered. Not cleared whole past the bound: that forgot the runs in flight (each
  // read its session again) and deopted the claim and append paths it was inlined into (p-deopt).
  const sessionOfRun = recentMap<string>(1000);
  const remember = (runId: string, sessionId: string) => sessionOfRun.set(runId, sessionId);
  // The runs whose every event this process appended (./followed-runs.ts).
  const followed = followedRuns();
  // run id → what runs before its next append (`beforeNext`; empty but for a held preparation).
  const before = new Map<string, () => void>();

  // The handle's held run events (one per handle, shared with every ledger on it).
  let heldDb: Db | undefined;
  let heldEvents: HeldRows | undefined;
  const heldOf = (db: Db): HeldRows => {
    if (db !== heldDb || !heldEvents) {
      heldEvents = heldRows(db, 'agent_run_events', RUN_EVENT_COLUMNS);
      heldDb = db;
    }
    return heldEvents;
  };

  /** `insertEventAt`; the highest seq read instead when another writer's event holds `seq`. */
  const insertAt = (input: Parameters<SqliteRunWrites['insertEvent']>[0], seq: number) => {
    try {
      return deps.writes.insertEventAt(input, seq);
    } catch (error) {
      if ((error as { code?: unknown }).code !== 'SQLITE_CONSTRAINT_UNIQUE') throw error;
      return deps.writes.insertEvent(input);
    }
  };

  function appendTo(
    runId: string,
    sessionId: string,
    type: string,
    payload: Record<string, unknown>,
    seq?: number,
    at?: number,
  ): RunEvent {
    if (before.size > 0) {
      const write = before.get(runId);
      if (write) {
        before.delete(runId);
        write();
      }
    }
    const db = deps.rawDb();
    groupCommit(db);
    const created_at = at ?? deps.clock.now();
    const input = {
      run_id: runId,
      session_id: sessionId,
      type,
      payload: JSON.stringify(payload),
      created_at,
    };
    const nextSeq = transactionMemo<number>(db, nextSeqs);
    const next = nextSeq?.get(runId);
    const held = heldOf(db);
    let row: { id: number; seq: number };
    if (next !== undefined) {
      // The run's next seq in this transaction, no other writer until it ends: no conflict can
      // come, the row is held for one INSERT (../store/held-rows.ts) with the id it answers.
      row = { id: held.insert([runId, sessionId, next, type, input.payload, created_at]), seq: next };
    } else {
      // A seq read from the table (max) or the caller's, whose conflict `insertAt` handles at the
      // INSERT: the held rows written first, this one at once.
      held.flush();
      row = seq === undefined ? deps.writes.insertEvent(input) : insertAt(input, seq);
      held.inserted(row.id);
    }
    nextSeq?.set(runId, row.seq + 1);
    const event = {
      id: row.id,
      run_id: runId,
      session_id: sessionId,
      seq: row.seq,
      type,
      payload,
      created_at,
    };
    followed.follow(event, input.payload);
    for (const listener of appendListeners) {
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
    append(runId, type, payload, created_at) {
      let sessionId = sessionOfRun.get(runId);
      if (!sessionId) {
        sessionId = deps.queries.sessionOf(runId);
        if (!sessionId) throw new SvcError('not_found', `run_id: no run "${runId}"`);
        remember(runId, sessionId);
      }
      return appendTo(runId, sessionId, type, payload, undefined, created_at);
    },
    beforeNext(runId, write) {
      if (write) before.set(runId, write);
      else before.delete(runId);
    },
    onAppend(listener) {
      appendListeners = [...appendListeners, listener];
      return () => {
        const at = appendListeners.indexOf(listener);
        if (at >= 0) appendListeners = appendListeners.toSpliced(at, 1);
      };
    },
    inserted(runId) {
      transactionMemo<number>(deps.rawDb(), nextSeqs)?.set(runId, 1);
    },
    forget(runId) {
      sessionOfRun.delete(runId);
      before.delete(runId);
      followed.forget(runId);
    },
    takeAppended: followed.take,
    known: remember,
  };
}
