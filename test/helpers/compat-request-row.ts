/**
 * A compat request ledger row as a request's start writes it (running, no outcome yet), for the
 * store tests that insert one: the ids, and any field a test pins.
 */
import type { CompatRequestRow } from '../../src/runs/compat-request-repository';

export type StartedCompatRow = Omit<CompatRequestRow, 'finished_at'>;

export function compatRequestRow(
  ids: Pick<StartedCompatRow, 'request_id' | 'run_id' | 'session_id'>,
  fields: Partial<StartedCompatRow> = {},
): StartedCompatRow {
  return {
    ...ids,
    requested_model: 'gpt-x',
    model: 'fake/m1',
    model_source: 'requested',
    stream: true,
    include_usage: false,
    session_binding: 'new',
    message_count: 2,
    ignored_fields: ['temperature'],
    status: 'running',
    finish_reason: null,
    http_status: null,
    error: null,
    prompt_tokens: 0,
    completion_tokens: 0,
    created_at: 1_000,
    ...fields,
  };
}
