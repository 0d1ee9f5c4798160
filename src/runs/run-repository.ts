/**
 * Every write of the run ledger (`agent_runs`, `agent_run_events`): the statements the ledger's
 * writes, events and recovery run. Reads are in ./queries.ts. A second storage backend implements
 * `RunWrites` next to `RunQueries`.
 * @module
 */
import type { Database, Statement } from 'better-sqlite3';
import type { FailureReport } from '../errors';
import type { AsyncOf } from '../store/async-of';
import { flushHeld, transactionMemo } from '../store/transaction-memo';
import { getWideRow } from '../store/wide-row';
import { heldRunTotals, settleHeldTotals, type TotalsPatch } from './held-run-totals';
import type { RunRow } from './queries';
import { type InsertedRunColumns, insertedRow, knownRunRows } from './run-row-known';
import type { RunStatus, RunUsage } from './types';

/** The columns a new run row is written with (a new run is queued or running). */
export interface RunRowInsert extends InsertedRunColumns {
  status: 'queued' | 'running';
}

/** The columns an update changes (`undefined` leaves one as it is). */
export interface RunRowPatch {
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

export interface RunWrites {
  insertRun(row: RunRowInsert): void;
  /**
   * Running → interrupted, its workspace leases released with it (its process is gone); returns
   * false when the run was no longer running.
   */
  interruptIfRunning(id: string, reason: string, now: number): boolean;
  /** Marks a run interrupted whatever its status (a run of a process that is gone), as above. */
  interrupt(id: string, reason: string, now: number): void;
  /** Queued → running, owned by this process. */
  markRunning(id: string, now: number, owner: { pid: number; host: string; runner: string }): void;
  /** Returns false when there is no such run. */
  updateRun(id: string, patch: RunRowPatch, now: number): boolean;
  requestCancel(id: string, now: number): void;
  /** Deletes these runs (their events go with them). */
  deleteRuns(ids: readonly string[]): void;
  /** Appends an event with the run's next sequence number. */
  insertEvent(event: {
    run_id: string;
    session_id: string;
    type: string;
    payload: string;
    created_at: number;
  }): { id: number; seq: number };
}

/** The writes over a statement cache; `transaction` wraps the multi-row delete. */
/** The columns a run patch sets, with their values, `updated_at` last (both backends use it). */
export function runPatchColumns(patch: RunRowPatch, now: number): [string, unknown][] {
  const columns: [string, unknown][] = [];
  const set = (column: string, value: unknown) => columns.push([column, value]);
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
  set('updated_at', now);
  return columns;
}

/** The SQLite writes, with the update that reads the row back in the same statement. */
export interface SqliteRunWrites extends RunWrites {
  /** `updateRun`, answering the row as updated (`RETURNING *`); undefined when there is no such run. */
  updateRunRow(id: string, patch: RunRowPatch, now: number): RunRow | undefined;
  /**
   * `updateRun` of a run's totals held while the transaction lasts (./held-run-totals.ts): the run's
   * last step end, whose finish writes them again. Outside a transaction: `updateRun` at once.
   */
  holdRunTotals(id: string, patch: RunRowPatch, now: number): void;
  /**
   * `updateRunRow`, and in the same statement whether the run's session has queued runs (what a
   * finish's queue drain would read next, p-sqlcpu3).
   */
  updateRunRowQueued(
    id: string,
    patch: RunRowPatch,
    now: number,
  ): { row: RunRow; queued: boolean } | undefined;
  /** `updateRun`, answering only the row's `cancel_requested`; undefined when there is no such run. */
  updateRunCancel(id: string, patch: RunRowPatch, now: number): { cancel_requested: number } | undefined;
  /** `insertRun`, answering the row as inserted (`RETURNING *`: no read after the write). */
  insertRunRow(row: RunRowInsert): RunRow;
  /** `markRunning`, answering the row as updated; undefined when there is no such run. */
  markRunningRow(id: string, now: number, owner: RunOwner): RunRow | undefined;
  /**
   * `markRunningRow` of a queued run no other run of its session is running beside, checked in
   * the same statement; undefined when there is no such run, it is not queued, or one is. A run
   * this transaction inserted (and wrote nothing else to) is answered from its values and the
   * claim's, the statement without `RETURNING *`.
   */
  claimFreeRow(id: string, now: number, owner: RunOwner): RunRow | undefined;
  /**
   * `insertEvent` with the sequence number known (the run's next one, as the transaction that
   * appended its previous event knows it: ./run-events.ts): a plain value, no subquery.
   */
  insertEventAt(event: Parameters<RunWrites['insertEvent']>[0], seq: number): { id: number; seq: number };
}

type RunOwner = { pid: number; host: string; runner: string };

// `updated_at` last: the values of `runInsertValues`, then `created_at` again.
const INSERT_RUN = `INSERT INTO agent_runs (id, session_id, parent_run_id, family_session_id, status, agent, model, origin,
             prompt, options, created_at, started_at, pid, host, runner, updated_at)
           VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`;
const MARK_RUNNING =
  "UPDATE agent_runs SET status = 'running', started_at = ?, updated_at = ?, pid = ?, host = ?, runner = ? WHERE id = ?";
// MARK_RUNNING's update where the claim's checks hold (the reads `claim` makes otherwise).
const CLAIM_CHECKED = `${MARK_RUNNING} AND status = 'queued' AND NOT EXISTS (SELECT 1 FROM agent_runs AS other
             WHERE other.session_id = agent_runs.session_id AND other.status = 'running' AND other.id != agent_runs.id)`;
const CLAIM_FREE = `${CLAIM_CHECKED} RETURNING *`;
// Whether the updated run's session has queued runs, as a `RETURNING` column after the row's.
const QUEUED = `EXISTS (SELECT 1 FROM agent_runs AS queued
             WHERE queued.session_id = agent_runs.session_id AND queued.status = 'queued') AS queued_runs`;
const insertParams = (row: RunRowInsert) => [...runInsertValues(row), row.created_at];

/** A new run row's values in the column order of `RunRowInsert` (both backends' INSERT). */
export function runInsertValues(row: RunRowInsert): unknown[] {
  return [
    row.id,
    row.session_id,
    row.parent_run_id,
    row.family_session_id,
    row.status,
    row.agent,
    row.model,
    row.origin,
    row.prompt,
    row.options,
    row.created_at,
    row.started_at,
    row.pid,
    row.host,
    row.runner,
  ];
}

export function createRunWrites(
  prepare: (text: string) => Statement,
  transaction: (fn: () => void) => void,
): SqliteRunWrites {
  // The rows the connection's current transaction inserted, each until another write of it: a
  // claim of one answers the row from its values, no `RETURNING *` (p-sqlcpu3).
  const insertedOwner = {};
  let handle: Database | undefined;
  const inserted = () => (handle ? transactionMemo<RunRow>(handle, insertedOwner) : undefined);
  const totals = runTotals(prepare, inserted, (id, patch, now) => void update(id, patch, now));
  const forget = totals.forget;
  const claimInserted = (row: RunRow, now: number, owner: RunOwner): RunRow | undefined => {
    const params = [now, now, owner.pid, owner.host, owner.runner, row.id];
    if (row.status !== 'queued' || prepare(CLAIM_CHECKED).run(...params).changes === 0) return undefined;
    return {
      ...row,
      status: 'running',
      pid: owner.pid,
      host: owner.host,
      runner: owner.runner,
      started_at: now,
      updated_at: now,
    };
  };
  const known = knownRunRows(prepare);
  const keep = known.keep;
  // `returning`: the columns the statement answers (`RETURNING …`); none: whether it changed a row.
  const update = (id: string, patch: RunRowPatch, now: number, returning?: string) => {
    forget(id, patch);
    // One loop, no `map(…).join`: TurboFan's inlined `map` answers a holey array, and the `join`
    // (whose feedback saw the builtin's packed ones) would deopt the optimized update once.
    let sets = '';
    const params: unknown[] = [];
    for (const [column, value] of runPatchColumns(patch, now)) {
      sets += sets ? `, ${column} = ?` : `${column} = ?`;
      params.push(value);
    }
    const text = `UPDATE agent_runs SET ${sets} WHERE id = ?`;
    if (returning === '*') return known.update(id, text, params);
    if (returning === QUEUED) {
      const answer = known.updateWith(id, text, params, QUEUED);
      return answer && { row: answer.row, queued: answer.last === 1 };
    }
    return returning
      ? prepare(`${text} RETURNING ${returning}`).get(...params, id)
      : prepare(text).run(...params, id).changes > 0;
  };
  return {
    insertRun(row) {
      prepare(INSERT_RUN).run(...insertParams(row));
    },
    insertRunRow(row) {
      const statement = prepare(INSERT_RUN);
      statement.run(...insertParams(row));
      handle = statement.database;
      const answer = keep(insertedRow(row));
      inserted()?.set(row.id, answer);
      return answer;
    },
    ...interruptions(prepare, transaction, forget),
    markRunning(id, now, owner) {
      forget(id);
      prepare(MARK_RUNNING).run(now, now, owner.pid, owner.host, owner.runner, id);
    },
    // The run rows (28 columns) through their values: ../store/wide-row.ts.
    markRunningRow(id, now, owner) {
      forget(id);
      return keep(
        getWideRow<RunRow>(prepare(`${MARK_RUNNING} RETURNING *`), [
          now,
          now,
          owner.pid,
          owner.host,
          owner.runner,
          id,
        ]),
      );
    },
    claimFreeRow(id, now, owner) {
      const row = inserted()?.get(id);
      if (row) {
        forget(id);
        const claimed = claimInserted(row, now, owner);
        if (claimed) return claimed;
      }
      return keep(
        getWideRow<RunRow>(prepare(CLAIM_FREE), [now, now, owner.pid, owner.host, owner.runner, id]),
      );
    },
    updateRun: (id, patch, now) => update(id, patch, now) as boolean,
    holdRunTotals: (id, patch, now) => totals.hold(id, patch, now),
    updateRunRow: (id, patch, now) => update(id, patch, now, '*') as RunRow | undefined,
    updateRunRowQueued: (id, patch, now) =>
      update(id, patch, now, QUEUED) as { row: RunRow; queued: boolean } | undefined,
    updateRunCancel: (id, patch, now) =>
      update(id, patch, now, 'cancel_requested') as { cancel_requested: number } | undefined,
    requestCancel(id, now) {
      forget(id);
      prepare('UPDATE agent_runs SET cancel_requested = 1, updated_at = ? WHERE id = ?').run(now, id);
    },
    deleteRuns(ids) {
      const remove = prepare('DELETE FROM agent_runs WHERE id = ?');
      // Their events held for one INSERT (./run-events.ts) go in first: the cascade takes them.
      flushHeld(remove.database);
      transaction(() => {
        for (const runId of ids) {
          forget(runId);
          known.forget(runId);
          remove.run(runId);
        }
      });
    },
    insertEvent(event) {
      return prepare(
        `INSERT INTO agent_run_events (run_id, session_id, seq, type, payload, created_at)
           VALUES (?, ?, (SELECT coalesce(max(seq), 0) + 1 FROM agent_run_events WHERE run_id = ?), ?, ?, ?)
           RETURNING id, seq`,
      ).get(event.run_id, event.session_id, event.run_id, event.type, event.payload, event.created_at) as {
        id: number;
        seq: number;
      };
    },
    insertEventAt(event, seq) {
      // The id as `lastInsertRowid` (the row's rowid: `id` is its INTEGER PRIMARY KEY), not
      // `RETURNING id`: SQLite's RETURNING costs ≈ 1.5 µs an append (bench/ledger-seq.mjs, p-bus).
      const { lastInsertRowid } = prepare(
        `INSERT INTO agent_run_events (run_id, session_id, seq, type, payload, created_at)
           VALUES (?, ?, ?, ?, ?, ?)`,
      ).run(event.run_id, event.session_id, seq, event.type, event.payload, event.created_at);
      return { id: Number(lastInsertRowid), seq };
    },
  };
}

/**
 * The interruptions: of a run whose process is gone. Nothing renews or releases the workspace
 * leases it held (as `run:<id>`, run_id the run), and every writer would wait for their expiry:
 * they go in the interruption's transaction, as in PostgreSQL's (./pg-run-write-repository.ts).
 * Only PostgreSQL's runs take the lease today (src/app/work.ts): here no row is found unless a
 * SQLite run comes to hold one.
 */
function interruptions(
  prepare: (text: string) => Statement,
  transaction: (fn: () => void) => void,
  forget: (id: string) => void,
): Pick<RunWrites, 'interruptIfRunning' | 'interrupt'> {
  const releaseLeases = (id: string) => prepare('DELETE FROM workspace_leases WHERE run_id = ?').run(id);
  // Inside an open transaction (a claim's, which interrupts the dead runs in its way) that one
  // holds both statements: no savepoint of its own.
  const atomically = (fn: () => void) =>
    prepare(INSERT_RUN).database.inTransaction ? fn() : transaction(fn);
  return {
    interruptIfRunning(id, reason, now) {
      forget(id);
      let interrupted = false;
      atomically(() => {
        interrupted =
          prepare(
            "UPDATE agent_runs SET status = 'interrupted', reason = ?, finished_at = ?, updated_at = ? WHERE id = ? AND status = 'running'",
          ).run(reason, now, now, id).changes > 0;
        if (interrupted) releaseLeases(id);
      });
      return interrupted;
    },
    interrupt(id, reason, now) {
      forget(id);
      atomically(() => {
        prepare(
          "UPDATE agent_runs SET status = 'interrupted', reason = ?, finished_at = ?, updated_at = ? WHERE id = ?",
        ).run(reason, now, now, id);
        releaseLeases(id);
      });
    },
  };
}

/**
 * Before each write of a run (`forget`): the totals its last step end holds (./held-run-totals.ts,
 * on the handle `prepare` uses) dropped (a write with the totals: its finish) or written first, and
 * the row this transaction inserted no longer known (`inserted`).
 */
function runTotals(
  prepare: (text: string) => Statement,
  inserted: () => Map<string, RunRow> | undefined,
  write: (id: string, patch: RunRowPatch, now: number) => void,
) {
  const database = () => prepare(INSERT_RUN).database;
  // `patch`: one `hold` was given (a `RunRowPatch`).
  const held = (id: string, patch: TotalsPatch, now: number) => write(id, patch as RunRowPatch, now);
  return {
    forget(id: string, patch?: RunRowPatch) {
      settleHeldTotals(database(), id, patch);
      inserted()?.delete(id);
    },
    hold: (id: string, patch: RunRowPatch, now: number) =>
      heldRunTotals(database(), held).hold(id, patch, now),
  };
}

/** The SQLite writes behind the async interface; each runs its statements when it is called. */
export function asyncRunWrites(w: RunWrites): AsyncOf<RunWrites> {
  return {
    insertRun: async (row) => w.insertRun(row),
    interruptIfRunning: async (id, reason, now) => w.interruptIfRunning(id, reason, now),
    interrupt: async (id, reason, now) => w.interrupt(id, reason, now),
    markRunning: async (id, now, owner) => w.markRunning(id, now, owner),
    updateRun: async (id, patch, now) => w.updateRun(id, patch, now),
    requestCancel: async (id, now) => w.requestCancel(id, now),
    deleteRuns: async (ids) => w.deleteRuns(ids),
    insertEvent: async (event) => w.insertEvent(event),
  };
}
