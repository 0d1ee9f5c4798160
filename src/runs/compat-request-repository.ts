/**
 * The compat ledger's table, `openai_compat_requests`: one row per chat-completions request, keyed
 * by its `request_id` (the completion `id` the client got), pointing at the agent run that
 * answered it (the run's own events stay in the run ledger). The only place that knows how these
 * rows are stored: the compat surface records and reads them through this interface.
 * @module
 */
import type { Db } from '../store/db';
import type { AlongsideWrite, GatedInsert } from './types';

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

/** How a request ended (finished_at is the time of the call). */
export type CompatRequestOutcome = Pick<
  CompatRequestRow,
  'status' | 'finish_reason' | 'http_status' | 'error' | 'prompt_tokens' | 'completion_tokens' | 'finished_at'
>;

/** Async (issue 18): the SQLite implementation below resolves at once. */
export interface CompatRequestRepository {
  insert(row: Omit<CompatRequestRow, 'finished_at'>): Promise<void>;
  /**
   * Whether the request's row was there to finish: its run too then (the row's run_id references
   * it, ON DELETE CASCADE), so the compat finish appends to the run without reading it.
   */
  finish(requestId: string, outcome: CompatRequestOutcome): Promise<boolean>;
  /** Newest first, at most `limit`, with the count of every row. */
  list(options: { limit: number }): Promise<{ rows: CompatRequestRow[]; total: number }>;
  get(requestId: string): Promise<CompatRequestRow | undefined>;
  /** PostgreSQL: `insert` as a write for `RunLedger.appendAlongside` (one statement with its event). */
  insertWrite?(row: Omit<CompatRequestRow, 'finished_at'>): AlongsideWrite;
  /**
   * PostgreSQL: `insert` as a write in its run's claim (`ClaimOptions.alongside`): made only when
   * the claim is, a request id already there skipped (no row answered, no event).
   */
  insertAfterClaim?(row: Omit<CompatRequestRow, 'finished_at'>): GatedInsert;
  /** PostgreSQL: `finish` as a write for `RunLedger.appendAlongside`. */
  finishWrite?(requestId: string, outcome: CompatRequestOutcome): AlongsideWrite;
  /**
   * `finish` as a write in its run's finish (`FinishAlongside`): made only when the run's row is,
   * answering a row only when it ended one. PostgreSQL: in the finish's statement (p-pgcompat6);
   * SQLite: at once in the finish's transaction (`now`, p-syncrepo).
   */
  finishInRunFinish?(requestId: string, outcome: CompatRequestOutcome): GatedInsert;
}

/** A row as both backends store it: booleans as 0/1, the ignored fields as a JSON array. */
export interface CompatStoredRow
  extends Omit<CompatRequestRow, 'stream' | 'include_usage' | 'ignored_fields'> {
  stream: number;
  include_usage: number;
  ignored_fields: string;
}

/**
 * The values of an insert as stored, in the column order of both backends' INSERT (positional:
 * no named-parameter object to build and bind, two statements a compat request).
 */
export function compatInsertValues(row: Omit<CompatRequestRow, 'finished_at'>): unknown[] {
  return [
    row.request_id,
    row.run_id,
    row.session_id,
    row.requested_model,
    row.model,
    row.model_source,
    row.stream ? 1 : 0,
    row.include_usage ? 1 : 0,
    row.session_binding,
    row.message_count,
    JSON.stringify(row.ignored_fields),
    row.status,
    row.finish_reason,
    row.http_status,
    row.error,
    row.prompt_tokens,
    row.completion_tokens,
    row.created_at,
  ];
}

/** The values of a finish, in the order of both backends' UPDATE (the request id last). */
export function compatFinishValues(requestId: string, outcome: CompatRequestOutcome): unknown[] {
  return [
    outcome.status,
    outcome.finish_reason,
    outcome.http_status,
    outcome.error,
    outcome.prompt_tokens,
    outcome.completion_tokens,
    outcome.finished_at,
    requestId,
  ];
}

const INSERT = `INSERT INTO openai_compat_requests (request_id, run_id, session_id, requested_model, model, model_source,
    stream, include_usage, session_binding, message_count, ignored_fields, status, finish_reason, http_status,
    error, prompt_tokens, completion_tokens, created_at)
  VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`;
const FINISH = `UPDATE openai_compat_requests SET status = ?, finish_reason = ?, http_status = ?, error = ?,
    prompt_tokens = ?, completion_tokens = ?, finished_at = ?
  WHERE request_id = ?`;

export function createCompatRequestRepository(db: () => Db): CompatRequestRepository {
  const finishNow = (requestId: string, outcome: CompatRequestOutcome): boolean =>
    db()
      .prepare(FINISH)
      .run(...compatFinishValues(requestId, outcome)).changes > 0;
  return {
    async insert(row) {
      db()
        .prepare(INSERT)
        .run(...compatInsertValues(row));
    },
    async finish(requestId, outcome) {
      return finishNow(requestId, outcome);
    },
    // The run's finish makes it in its own transaction, after `run.finished` (run-finish.ts).
    finishInRunFinish: (requestId, outcome) => ({
      values: compatFinishValues(requestId, outcome),
      cte: () => {
        throw new Error('a SQLite write in a run finish is made at once (now), not in a statement');
      },
      now: () => finishNow(requestId, outcome),
    }),
    async list(options) {
      const rows = db()
        .prepare('SELECT * FROM openai_compat_requests ORDER BY created_at DESC, rowid DESC LIMIT ?')
        .all(options.limit) as CompatStoredRow[];
      const total = (db().prepare('SELECT count(*) AS n FROM openai_compat_requests').get() as { n: number })
        .n;
      return { rows: rows.map(fromCompatStored), total };
    },
    async get(requestId) {
      const row = db().prepare('SELECT * FROM openai_compat_requests WHERE request_id = ?').get(requestId) as
        | CompatStoredRow
        | undefined;
      return row ? fromCompatStored(row) : undefined;
    },
  };
}

export function fromCompatStored(row: CompatStoredRow): CompatRequestRow {
  return {
    ...row,
    stream: row.stream === 1,
    include_usage: row.include_usage === 1,
    ignored_fields: JSON.parse(row.ignored_fields) as string[],
  };
}
