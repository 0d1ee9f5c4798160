/**
 * The compat ledger's table on PostgreSQL (issue 18): the `CompatRequestRepository` of
 * ./compat-request-repository.ts with the same answers, pinned by
 * test/store/contract/compat-requests.contract.ts. SQLite's rowid tie-break is `row_seq`
 * (PostgreSQL migration 9); booleans and the ignored-field list are stored as SQLite stores them.
 * The insert and the finish are also handed out as writes (`insertWrite`, `finishWrite`) that the
 * PostgreSQL run ledger makes in one statement with the request's run event
 * (./pg-run-ledger.ts `appendAlongside`): a compat request's start and end without a transaction's
 * BEGIN, COMMIT and run read around them.
 * @module
 */
import type { SqlClient } from '../store/postgres/client';
import {
  type CompatRequestRepository,
  type CompatRequestRow,
  type CompatStoredRow,
  compatFinishValues,
  compatInsertValues,
  fromCompatStored,
} from './compat-request-repository';

const INSERT = `INSERT INTO openai_compat_requests (request_id, run_id, session_id, requested_model, model, model_source,
    stream, include_usage, session_binding, message_count, ignored_fields, status, finish_reason, http_status,
    error, prompt_tokens, completion_tokens, created_at)
  VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18)`;
// The start's write (`insertWrite`): a request id already there is skipped, not an error, and its
// event with it (`gates`), so the compat start's transaction needs no savepoint around it (its run
// is the transaction's own, its other columns are the code's: nothing else of its data can fail).
const INSERT_ONCE = `${INSERT} ON CONFLICT (request_id) DO NOTHING RETURNING request_id`;
// The start's write in its run's claim (`insertAfterClaim`): a SELECT, so that it is made only
// where the claim's statement says (`go`); its parameters typed as the columns (a SELECT's
// untyped parameters would be text).
const COLUMN_TYPES = [
  'text',
  'text',
  'text',
  'text',
  'text',
  'text',
  'bigint',
  'bigint',
  'text',
  'bigint',
  'text',
  'text',
  'text',
  'bigint',
  'text',
  'bigint',
  'bigint',
  'bigint',
];
const gatedInsert = (offset: number, go: string): string =>
  `alongside AS (${INSERT.slice(0, INSERT.indexOf('VALUES'))}SELECT ${COLUMN_TYPES.map((t, i) => `$${offset + i + 1}::${t}`).join(', ')}
    WHERE ${go} ON CONFLICT (request_id) DO NOTHING RETURNING request_id)`;
const FINISH = `UPDATE openai_compat_requests SET status = $1, finish_reason = $2, http_status = $3, error = $4,
    prompt_tokens = $5, completion_tokens = $6, finished_at = $7
  WHERE request_id = $8`;

// The finish's write in its run's finish (`finishInRunFinish`): made only where the run's
// statement says (`go`), answering the row it ended.
const gatedFinish = (offset: number, go: string): string =>
  `alongside AS (UPDATE openai_compat_requests SET status = $${offset + 1}, finish_reason = $${offset + 2},
      http_status = $${offset + 3}, error = $${offset + 4}, prompt_tokens = $${offset + 5},
      completion_tokens = $${offset + 6}, finished_at = $${offset + 7}
    WHERE request_id = $${offset + 8} AND ${go} RETURNING request_id)`;

export function createPostgresCompatRequestRepository(deps: { sql: SqlClient }): CompatRequestRepository {
  const { sql } = deps;
  const read = (row: CompatStoredRow & { row_seq?: number }): CompatRequestRow => {
    const { row_seq: _order, ...rest } = row;
    return fromCompatStored(rest);
  };
  return {
    async insert(row) {
      await sql.run(INSERT, compatInsertValues(row));
    },
    async finish(requestId, outcome) {
      const changed = await sql.run(FINISH, compatFinishValues(requestId, outcome));
      return changed > 0;
    },
    insertWrite: (row) => ({ text: INSERT_ONCE, values: compatInsertValues(row), gates: true }),
    insertAfterClaim: (row) => ({ values: compatInsertValues(row), cte: gatedInsert }),
    finishWrite: (requestId, outcome) => ({ text: FINISH, values: compatFinishValues(requestId, outcome) }),
    finishInRunFinish: (requestId, outcome) => ({
      values: compatFinishValues(requestId, outcome),
      cte: gatedFinish,
    }),
    async list(options) {
      const rows = await sql.query<CompatStoredRow>(
        'SELECT * FROM openai_compat_requests ORDER BY created_at DESC, row_seq DESC LIMIT $1',
        [options.limit],
      );
      const total = await sql.one<{ n: number }>('SELECT count(*)::bigint AS n FROM openai_compat_requests');
      return { rows: rows.map(read), total: total?.n ?? 0 };
    },
    async get(requestId) {
      const row = await sql.one<CompatStoredRow>(
        'SELECT * FROM openai_compat_requests WHERE request_id = $1',
        [requestId],
      );
      return row ? read(row) : undefined;
    },
  };
}
