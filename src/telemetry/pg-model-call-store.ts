/**
 * The cost ledger's table, `model_calls`, on PostgreSQL (issue 18): the same answers as
 * ./model-call-store.ts. Text keys sort bytewise (`COLLATE "C"`), as SQLite's do.
 * @module
 */
import type { SqlClient } from '../store/postgres/client';
import type { TrailingInsert } from '../store/preceding-write';
import type { ModelCallRow, ModelCallStore, StatsKey, StatsRow, Totals } from './model-call-store';

const COLUMN: Record<StatsKey, string> = {
  purpose: 'purpose',
  model: "provider || '/' || model",
  day: 'day',
};

const COLUMNS = [
  'id',
  'at',
  'day',
  'session_id',
  'run_id',
  'provider',
  'model',
  'purpose',
  'input_tokens',
  'output_tokens',
  'reasoning_tokens',
  'cached_input_tokens',
  'cost',
  'ttft_ms',
  'duration_ms',
  'status',
] as const;

/** The row's INSERT, its parameters from `$offset+1`. */
const insertText = (offset: number) =>
  `INSERT INTO model_calls (${COLUMNS.join(', ')}) VALUES (${COLUMNS.map((_, i) => `$${offset + i + 1}`).join(', ')})`;

const valuesOf = (row: ModelCallRow) => COLUMNS.map((column) => row[column] ?? null);

export function createPostgresModelCallStore(deps: { sql: SqlClient }): ModelCallStore {
  const { sql } = deps;
  return {
    async insert(row) {
      await sql.run(insertText(0), valuesOf(row));
    },
    insertWrite(row, wrote): TrailingInsert {
      return { values: valuesOf(row), sql: insertText, wrote };
    },
    async stats(by, since) {
      const key = `(${COLUMN[by]}) COLLATE "C"`;
      const order = by === 'day' ? `${key} DESC` : `cost DESC, ${key}`;
      return await sql.query<StatsRow & Record<string, unknown>>(
        `SELECT ${COLUMN[by]} AS key, count(*) AS calls, count(*) FILTER (WHERE status = 'error') AS errors,
                coalesce(sum(input_tokens), 0) AS input_tokens, coalesce(sum(output_tokens), 0) AS output_tokens,
                coalesce(sum(cost), 0) AS cost
         FROM model_calls WHERE at >= $1 GROUP BY 1 ORDER BY ${order}`,
        [since],
      );
    },
    async totals(filter) {
      const where = whereClause({ session_id: filter.sessionId, day: filter.day, 'at >=': filter.since });
      const row = await sql.one<Totals & Record<string, unknown>>(
        `SELECT count(*) AS calls, coalesce(sum(input_tokens), 0) AS input_tokens,
                coalesce(sum(output_tokens), 0) AS output_tokens, coalesce(sum(cost), 0) AS cost
         FROM model_calls ${where.sql}`,
        where.params,
      );
      return row ?? { calls: 0, input_tokens: 0, output_tokens: 0, cost: 0 };
    },
    async list(filter) {
      const where = whereClause({ session_id: filter.sessionId, run_id: filter.runId });
      return await sql.query<ModelCallRow & Record<string, unknown>>(
        `SELECT ${COLUMNS.join(', ')} FROM model_calls ${where.sql} ORDER BY at, id COLLATE "C" LIMIT $${where.params.length + 1}`,
        [...where.params, filter.limit],
      );
    },
  };
}

/** `WHERE` over the conditions that are set (a column, or a column and its operator), `$n` params. */
function whereClause(conditions: Record<string, unknown>): { sql: string; params: unknown[] } {
  const set = Object.entries(conditions).filter(([, value]) => value !== undefined);
  if (set.length === 0) return { sql: '', params: [] };
  const sql = set
    .map(([key], i) => (key.includes(' ') ? `${key} $${i + 1}` : `${key} = $${i + 1}`))
    .join(' AND ');
  return { sql: `WHERE ${sql}`, params: set.map(([, value]) => value) };
}
