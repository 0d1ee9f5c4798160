/**
 * The compat ledger (spec: "The compat ledger path also needs `[options.openai_compat]`",
 * TOOLS-24): one row per chat-completions request, keyed by its `request_id` (the completion `id`
 * the client got), pointing at the agent run that answered it. The run's own events (phases, model
 * steps, tool calls) live in the run ledger; the compat layer appends `openai_compat.request`,
 * `openai_compat.tool_denied` and `openai_compat.response` there. Without `[options.openai_compat]`
 * (or with `ledger = false`) nothing is recorded here: the runs routes stay empty.
 * @module
 */
import type { App } from '../../../app';
import type { RunEvent } from '../../../runs/run-ledger';

export interface CompatRequestRow {
  request_id: string;
  run_id: string;
  session_id: string;
  requested_model: string;
  model: string;
  model_source: string;
  stream: boolean;
  include_usage: boolean;
  session_binding: 'new' | 'header';
  message_count: number;
  ignored_fields: string[];
  status: 'running' | 'completed' | 'failed' | 'cancelled' | 'disconnected';
  finish_reason: string | null;
  http_status: number | null;
  error: string | null;
  prompt_tokens: number;
  completion_tokens: number;
  created_at: number;
  finished_at: number | null;
}

interface Row extends Omit<CompatRequestRow, 'stream' | 'include_usage' | 'ignored_fields'> {
  stream: number;
  include_usage: number;
  ignored_fields: string;
}

/** Whether compat requests are recorded, and why not. */
export function ledgerEnabled(app: App): { enabled: boolean; reason: string } {
  const compat = app.config.options.openai_compat;
  if (!compat) return { enabled: false, reason: '[options.openai_compat] is not configured' };
  if (!compat.ledger) return { enabled: false, reason: 'options.openai_compat.ledger is false' };
  const store = app.runs.available();
  if (!store.ok) return { enabled: false, reason: store.reason };
  return { enabled: true, reason: 'recording every compat request as a run' };
}

export function recordRequest(app: App, row: Omit<CompatRequestRow, 'finished_at'>): void {
  app.db
    .prepare(
      `INSERT INTO openai_compat_requests (request_id, run_id, session_id, requested_model, model, model_source,
        stream, include_usage, session_binding, message_count, ignored_fields, status, finish_reason, http_status,
        error, prompt_tokens, completion_tokens, created_at)
       VALUES (@request_id, @run_id, @session_id, @requested_model, @model, @model_source, @stream, @include_usage,
        @session_binding, @message_count, @ignored_fields, @status, @finish_reason, @http_status, @error,
        @prompt_tokens, @completion_tokens, @created_at)`,
    )
    .run({
      ...row,
      stream: row.stream ? 1 : 0,
      include_usage: row.include_usage ? 1 : 0,
      ignored_fields: JSON.stringify(row.ignored_fields),
    });
}

export function finishRequest(
  app: App,
  requestId: string,
  patch: Pick<
    CompatRequestRow,
    'status' | 'finish_reason' | 'http_status' | 'error' | 'prompt_tokens' | 'completion_tokens'
  >,
): void {
  app.db
    .prepare(
      `UPDATE openai_compat_requests SET status = @status, finish_reason = @finish_reason, http_status = @http_status,
        error = @error, prompt_tokens = @prompt_tokens, completion_tokens = @completion_tokens, finished_at = @finished_at
       WHERE request_id = @request_id`,
    )
    .run({ ...patch, request_id: requestId, finished_at: app.clock.now() });
}

export function listRequests(
  app: App,
  options: { limit: number },
): { rows: CompatRequestRow[]; total: number } {
  const rows = app.db
    .prepare('SELECT * FROM openai_compat_requests ORDER BY created_at DESC, rowid DESC LIMIT ?')
    .all(options.limit) as Row[];
  const total = (app.db.prepare('SELECT count(*) AS n FROM openai_compat_requests').get() as { n: number }).n;
  return { rows: rows.map(toRow), total };
}

export function getRequest(app: App, requestId: string): CompatRequestRow | undefined {
  const row = app.db.prepare('SELECT * FROM openai_compat_requests WHERE request_id = ?').get(requestId) as
    | Row
    | undefined;
  return row ? toRow(row) : undefined;
}

export function requestEvents(app: App, row: CompatRequestRow): RunEvent[] {
  return app.runs.get(row.run_id) ? app.runs.events(row.run_id) : [];
}

function toRow(row: Row): CompatRequestRow {
  return {
    ...row,
    stream: row.stream === 1,
    include_usage: row.include_usage === 1,
    ignored_fields: JSON.parse(row.ignored_fields) as string[],
  };
}
