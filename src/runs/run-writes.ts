/**
 * The ledger's writes: creating a run, claiming a queued one, updating, cancelling, deleting.
 * @module
 */
import { SvcError } from '../errors';
import { type Db, groupCommit } from '../store/db';
import type { Clock, Ids } from '../util/ids';
import { type CreateRunInput, firstRunEvent, newRunRow } from './new-run';
import { type SqliteRunQueries, toRun } from './queries';
import type { RunEvents } from './run-events';
import type { RunOwner } from './run-recovery';
import type { RunRowPatch, SqliteRunWrites } from './run-repository';
import type { AgentRun, ClaimAlongside, RunEvent } from './types';

export type { CreateRunInput } from './new-run';

export type RunPatch = RunRowPatch;

/**
 * A claim's answer. `started`: the run's `run.started` event, written with the claim when the
 * caller asked for it (`claim(id, { started: true })`) and the ledger can (PostgreSQL's one-statement
 * claim); absent, the caller appends it. `next`: the event asked to follow it (`claim(id, { next })`),
 * written right after it in the same statement; absent, the caller appends it.
 */
export type ClaimResult =
  | {
      ok: true;
      run: AgentRun;
      started?: RunEvent;
      next?: RunEvent;
      /** `ClaimOptions.alongside`'s event, when it and its insert were written in the claim. */
      alongside?: RunEvent;
    }
  | { ok: false; blocking: AgentRun };

/** What a claim may ask of the ledger: `run.started` with it, and the event that follows that. */
export interface ClaimOptions {
  started?: boolean;
  /** With `started`: the run's next event, appended right after `run.started` (its time the claim's). */
  next?: { type: string; payload: Record<string, unknown> };
  /**
   * With `started` and `next`: another domain's insert and its run event, written in the claim's
   * statement after `next` where the ledger can (PostgreSQL); `alongside.written` tells the caller.
   */
  alongside?: ClaimAlongside;
}

export interface RunWriteOpsDeps {
  /** The handle after the first-use recovery. */
  db: () => Db;
  clock: Clock;
  ids: Ids;
  owner: RunOwner;
  queries: Pick<SqliteRunQueries, 'get' | 'runningOthers' | 'subtree'>;
  writes: SqliteRunWrites;
  events: Pick<RunEvents, 'appendTo' | 'forget' | 'known' | 'inserted'>;
  ownerAlive(run: AgentRun): boolean;
  require(id: string): AgentRun;
}

export interface RunWriteOps {
  create(input: CreateRunInput): AgentRun;
  claim(runId: string): ClaimResult;
  update(id: string, patch: RunPatch): AgentRun;
  /** `update`, and whether the run's session has queued runs, read in the same statement. */
  updateQueued(id: string, patch: RunPatch): { run: AgentRun; queued: boolean };
  /** `update`, answering only whether a cancel was requested (not the whole row). */
  updateCancel(id: string, patch: RunPatch): { cancel_requested: boolean };
  /** `update` of a run's totals held for its finish while the transaction lasts (`holdRunTotals`). */
  holdTotals(id: string, patch: RunPatch): void;
  requestCancel(id: string): void;
  delete(id: string): string[];
}

/**
 * The write ops behind the ledger's async interface (`create` apart): each has run its statements
 * when it returns.
 */
export function asyncWriteOps(ops: RunWriteOps) {
  return {
    claim: async (runId: string) => ops.claim(runId),
    update: async (id: string, patch: RunPatch) => ops.update(id, patch),
    updateCancel: async (id: string, patch: RunPatch) => ops.updateCancel(id, patch),
    holdTotals: async (id: string, patch: RunPatch) => ops.holdTotals(id, patch),
    updateQueued: async (id: string, patch: RunPatch) => ops.updateQueued(id, patch),
    requestCancel: async (id: string) => ops.requestCancel(id),
    delete: async (id: string) => ops.delete(id),
  };
}

export function createRunWriteOps(deps: RunWriteOpsDeps): RunWriteOps {
  const { owner, queries, writes } = deps;
  return {
    create(input) {
      deps.db();
      const now = deps.clock.now();
      const row = newRunRow(input, deps.ids.next('run'), now, owner);
      const inserted = writes.insertRunRow(row);
      deps.events.inserted(row.id);
      const first = firstRunEvent(row);
      // Its first event: seq 1, no read of the highest (the run's row was just inserted here).
      deps.events.appendTo(row.id, row.session_id, first.type, first.payload, 1);
      // The row as inserted (`insertRunRow`): the event appended since does not touch it.
      return toRun(inserted);
    },
    claim(runId) {
      const handle = deps.db();
      // The usual claim (a queued run, nothing running beside it in its session): the checks and
      // the update in one statement, atomic by itself. Anything else: the reads below say what.
      const free = writes.claimFreeRow(runId, deps.clock.now(), owner);
      if (free) {
        deps.events.known(runId, free.session_id);
        return { ok: true, run: toRun(free) };
      }
      /** The checks; the running runs of the session other than this one. */
      const check = (): AgentRun[] => {
        const run = queries.get(runId);
        if (!run) throw new SvcError('not_found', `run_id: no run "${runId}"`);
        if (run.status !== 'queued')
          throw new SvcError('conflict', `run ${runId} is ${run.status}, not queued`);
        return queries.runningOthers(run.session_id, runId);
      };
      const markRunning = (now: number): ClaimResult => {
        const row = writes.markRunningRow(runId, now, owner);
        if (!row) throw new SvcError('not_found', `run_id: no run "${runId}"`);
        // The claimed run's events are appended here: its session (fixed for life) is known.
        deps.events.known(runId, row.session_id);
        return { ok: true, run: toRun(row) };
      };
      // Inside an open transaction (the turn's batch) a claim that writes at most one row needs no
      // savepoint: nothing is written before a check throws, and one statement is atomic. One that
      // interrupts other runs first keeps those writes and its own in a savepoint.
      if (handle.inTransaction) {
        const others = check();
        if (others.length === 0) return markRunning(deps.clock.now());
        if (deps.ownerAlive(others[0])) return { ok: false, blocking: others[0] };
      }
      return handle
        .transaction((): ClaimResult => {
          const others = check();
          const now = deps.clock.now();
          for (const other of others) {
            if (deps.ownerAlive(other)) return { ok: false, blocking: other };
            // Its process is gone: the run was interrupted (recovery missed it, e.g. a crash just now).
            writes.interrupt(other.id, `the process running it (pid ${other.pid ?? '?'}) exited`, now);
          }
          return markRunning(now);
        })
        .immediate();
    },
    update(id, patch) {
      groupCommit(deps.db());
      // The row as updated comes back with the UPDATE (no read after the write).
      const row = writes.updateRunRow(id, patch, deps.clock.now());
      if (!row) throw new SvcError('not_found', `run_id: no run "${id}"`);
      return toRun(row);
    },
    updateQueued(id, patch) {
      groupCommit(deps.db());
      const answer = writes.updateRunRowQueued(id, patch, deps.clock.now());
      if (!answer) throw new SvcError('not_found', `run_id: no run "${id}"`);
      return { run: toRun(answer.row), queued: answer.queued };
    },
    updateCancel(id, patch) {
      groupCommit(deps.db());
      const row = writes.updateRunCancel(id, patch, deps.clock.now());
      if (!row) throw new SvcError('not_found', `run_id: no run "${id}"`);
      return { cancel_requested: row.cancel_requested === 1 };
    },
    holdTotals(id, patch) {
      groupCommit(deps.db());
      writes.holdRunTotals(id, patch, deps.clock.now());
    },
    requestCancel(id) {
      deps.db();
      writes.requestCancel(id, deps.clock.now());
    },
    delete(id) {
      deps.db();
      deps.require(id);
      const ids = queries.subtree(id);
      writes.deleteRuns(ids);
      for (const runId of ids) deps.events.forget(runId);
      return ids;
    },
  };
}
