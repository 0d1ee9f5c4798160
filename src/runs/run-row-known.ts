/**
 * A SQLite run's fixed columns known beyond the statement that wrote or read them (issue 17 item 3,
 * p-sqlrow; p-sqlev Left 3): an update that answers the run's row (a finish's, `RETURNING *`)
 * returns instead only the columns another writer may change, when this process holds the run's
 * row as it inserted or last read it; the patch's columns are its values, the fixed ones the held
 * row's. Fixed: the columns no SQLite `UPDATE agent_runs` sets (./run-repository.ts is every
 * writer of the table): a run's id, session, parent, family, agent, origin, prompt, options and
 * `created_at`. They hold for as long as the row exists, whoever writes the others (another
 * connection, another process, a transaction rolled back or not): a run id is never used again
 * (ULID), a run this process deletes is forgotten, and a row that is gone answers nothing, as
 * `RETURNING *` did. What another connection may change (status, pid, cancel_requested…) is read
 * back with the update, never kept.
 * @module
 */
import type { Statement } from 'better-sqlite3';
import { type KnownRows, knownRows } from '../store/known-rows';
import type { RunRow } from './queries';

/** The columns `INSERT_RUN` (./run-repository.ts) sets: the rest take the migrations' defaults. */
export type InsertedRunColumns = Pick<
  RunRow,
  | 'id'
  | 'session_id'
  | 'parent_run_id'
  | 'family_session_id'
  | 'status'
  | 'agent'
  | 'model'
  | 'origin'
  | 'prompt'
  | 'options'
  | 'created_at'
  | 'started_at'
  | 'pid'
  | 'host'
  | 'runner'
>;

/**
 * The row `INSERT_RUN` writes, as `SELECT *` reads it: the table's columns in their order, the
 * defaults of the migrations ('agent', then `failure`) for the columns it does not set. Built here
 * instead of `RETURNING *`, which costs ≈ 7 µs a new run on SQLite (p-bus: 13.5 against 6.2 µs
 * an insert, the table and its four indexes). A column added to `agent_runs` is added here too,
 * and only here (`RUN_COLUMNS` is its keys): ENGINE-CPU-11 compares this row with the stored one,
 * COMPAT-PERF-482 an update's answer, key order included.
 */
export function insertedRow(row: InsertedRunColumns): RunRow {
  return {
    id: row.id,
    session_id: row.session_id,
    parent_run_id: row.parent_run_id,
    family_session_id: row.family_session_id,
    status: row.status,
    agent: row.agent,
    model: row.model,
    origin: row.origin,
    prompt: row.prompt,
    options: row.options,
    reason: null,
    error: null,
    steps: 0,
    input_tokens: 0,
    output_tokens: 0,
    reasoning_tokens: 0,
    cached_input_tokens: 0,
    cost: 0,
    result_message_id: null,
    pid: row.pid,
    host: row.host,
    runner: row.runner,
    cancel_requested: 0,
    created_at: row.created_at,
    started_at: row.started_at,
    finished_at: null,
    updated_at: row.created_at,
    failure: null,
  };
}

// `agent_runs`' columns in the table's order (`SELECT *`): `insertedRow`'s keys, whatever the values.
const RUN_COLUMNS: readonly string[] = Object.keys(insertedRow({} as InsertedRunColumns));
const FIXED_COLUMNS: readonly string[] = [
  'id',
  'session_id',
  'parent_run_id',
  'family_session_id',
  'agent',
  'origin',
  'prompt',
  'options',
  'created_at',
];

export type KnownRunRows = KnownRows<RunRow>;

export function knownRunRows(prepare: (text: string) => Statement): KnownRunRows {
  return knownRows<RunRow>(RUN_COLUMNS, FIXED_COLUMNS, prepare);
}
