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
import { fastTemplate, rawValues } from '../store/wide-row';
import { recentMap } from '../util/recent-map';
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
const RUN_TEMPLATE = fastTemplate(RUN_COLUMNS);

/** What an UPDATE of one `SET` list sets (in order) and answers: every other column not fixed. */
interface UpdateShape {
  patched: string[];
  answered: string[];
  returning: string;
  returningQueued: string;
}

export interface KnownRunRows {
  /** Holds the run's row (one this process inserted or read whole); answers it. */
  keep<R extends RunRow | undefined>(row: R): R;
  /** The run was deleted by this process. */
  forget(id: string): void;
  /**
   * `UPDATE agent_runs SET <sets> WHERE id = ?` (`text`, `params` the values of `sets`), answering
   * the row (with `queued`: and the `queued` expression's value) while returning only the columns
   * not fixed and not set; undefined when there is no such run; false when the run's row is not
   * held (the caller returns `*`).
   */
  update(
    id: string,
    text: string,
    sets: string,
    params: unknown[],
    queued: boolean,
  ): RunRow | { row: RunRow; queued: boolean } | undefined | false;
}

/** `queued`: the `RETURNING` expression (named `queued_runs`) `update` adds with `queued`. */
export function knownRunRows(prepare: (text: string) => Statement, queued: string): KnownRunRows {
  // run id → its row, the last 256 (a run's start to its finish is what it serves).
  const rows = recentMap<RunRow>(256);
  const shapes = new Map<string, UpdateShape>();
  const shapeOf = (sets: string): UpdateShape => {
    let shape = shapes.get(sets);
    if (!shape) {
      const patched = sets.split(', ').map((set) => set.slice(0, set.indexOf(' ')));
      const answered = RUN_COLUMNS.filter((c) => !FIXED_COLUMNS.includes(c) && !patched.includes(c));
      const returning = answered.join(', ');
      shape = { patched, answered, returning, returningQueued: `${returning}, ${queued}` };
      shapes.set(sets, shape);
    }
    return shape;
  };
  return {
    keep(row) {
      if (row) rows.set(row.id, row);
      return row;
    },
    forget: (id) => rows.delete(id),
    update(id, text, sets, params, withQueued) {
      const held = rows.get(id) as unknown as Record<string, unknown> | undefined;
      if (!held) return false;
      const { patched, answered, returning, returningQueued } = shapeOf(sets);
      const statement = prepare(`${text} RETURNING ${withQueued ? returningQueued : returning}`);
      const values = rawValues(statement, [...params, id]);
      if (!values) return undefined;
      // A copy of the template (fast properties, the table's key order), filled.
      const row: Record<string, unknown> = { ...RUN_TEMPLATE };
      for (const column of FIXED_COLUMNS) row[column] = held[column];
      for (let i = 0; i < patched.length; i++) row[patched[i] as string] = params[i];
      for (let i = 0; i < answered.length; i++) row[answered[i] as string] = values[i];
      const answer = row as unknown as RunRow;
      return withQueued ? { row: answer, queued: values[answered.length] === 1 } : answer;
    },
  };
}
