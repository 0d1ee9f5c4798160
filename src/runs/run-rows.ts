/**
 * The run ledger's rows as its records: a run row as the run, an event row as the event (SQLite
 * and PostgreSQL read the same columns).
 * @module
 */
import type { FailureReport } from '../errors';
import { fastTemplate } from '../store/wide-row';
import type { AgentRun, RunEvent, RunOptions } from './types';

export interface RunRow
  extends Omit<
    AgentRun,
    | 'options'
    | 'usage'
    | 'cancel_requested'
    | 'input_tokens'
    | 'output_tokens'
    | 'reasoning_tokens'
    | 'failure'
  > {
  options: string;
  failure: string | null;
  input_tokens: number;
  output_tokens: number;
  reasoning_tokens: number;
  cached_input_tokens: number;
  cancel_requested: number;
}

export type EventRow = Omit<RunEvent, 'payload'> & { payload: string };

/** A stored JSON object; anything else (or malformed text) reads as an empty object. */
function objectOf(text: string): Record<string, unknown> {
  try {
    const value = JSON.parse(text) as unknown;
    return value && typeof value === 'object' ? (value as Record<string, unknown>) : {};
  } catch {
    return {};
  }
}

/** The token columns a run row folds into `usage`. */
const USAGE_COLUMNS = new Set(['input_tokens', 'output_tokens', 'reasoning_tokens', 'cached_input_tokens']);

/**
 * The run's keys for one row layout: the row's columns in their order without the token columns,
 * then `usage`. `template` is an object of those keys made by `JSON.parse`, which builds it with
 * fast properties; `toRun` copies it (one allocation, same hidden class) and fills it in.
 */
interface RunLayout {
  columns: string[];
  template: Record<string, unknown>;
}

/** The layout of the rows seen last (a store's run rows all have one). */
let lastLayout: RunLayout | undefined;

/**
 * A run row as the run: the row's columns in their order, `options`/`failure` parsed, the token
 * columns folded into `usage` (last). Filled into a copy of the layout's template: adding the
 * ~28 columns one by one to `{}` (a keyed store each) turns the object into a dictionary after 16,
 * ≈ 3 KB of hash table a run (three runs a compat request) and slower reads after; a rest
 * destructuring of the row goes through V8's slow generic copy (≈ 5x).
 */
export function toRun(row: RunRow): AgentRun {
  const layout = layoutOf(row);
  const run: Record<string, unknown> = { ...layout.template };
  const values = row as unknown as Record<string, unknown>;
  for (const column of layout.columns) run[column] = values[column];
  run.options = objectOf(row.options) as RunOptions;
  run.failure = row.failure ? (objectOf(row.failure) as unknown as FailureReport) : null;
  run.usage = {
    input_tokens: row.input_tokens,
    output_tokens: row.output_tokens,
    reasoning_tokens: row.reasoning_tokens,
    cached_input_tokens: row.cached_input_tokens,
  };
  run.cancel_requested = row.cancel_requested === 1;
  return run as unknown as AgentRun;
}

export const toEvent = (row: EventRow): RunEvent => ({ ...row, payload: objectOf(row.payload) });

/** The row's layout: the last one when its columns are the same, in the same order, else a new one. */
function layoutOf(row: RunRow): RunLayout {
  const last = lastLayout;
  if (last) {
    let at = 0;
    let same = true;
    for (const column in row) {
      if (USAGE_COLUMNS.has(column)) continue;
      if (last.columns[at++] !== column) {
        same = false;
        break;
      }
    }
    if (same && at === last.columns.length) return last;
  }
  const columns: string[] = [];
  for (const column in row) if (!USAGE_COLUMNS.has(column)) columns.push(column);
  lastLayout = { columns, template: fastTemplate([...columns, 'usage']) };
  return lastLayout;
}
