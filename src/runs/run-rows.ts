/**
 * The run ledger's rows as its records: a run row as the run, an event row as the event (SQLite
 * and PostgreSQL read the same columns).
 * @module
 */
import type { FailureReport } from '../errors';
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
 * A run row as the run: the row's columns in their order, `options`/`failure` parsed, the token
 * columns folded into `usage` (last). Copied key by key: a rest destructuring of the ~28-column
 * row goes through V8's slow generic copy (≈ 5x this loop; several runs are read per request).
 */
export function toRun(row: RunRow): AgentRun {
  const run: Record<string, unknown> = {};
  for (const column in row) {
    if (!USAGE_COLUMNS.has(column)) run[column] = row[column as keyof RunRow];
  }
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
