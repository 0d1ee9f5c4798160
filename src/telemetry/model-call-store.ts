/**
 * The cost ledger's table, `model_calls`: one row per model call svc made (agent steps,
 * sub-agent steps, compat turns, compaction and summaries), with the provider and model that
 * served it, why it was made, its tokens, its cost from the catalog and its latency. The only
 * place that knows how these rows are stored.
 * @module
 */
import type { CallPurpose, ModelCallEnd } from '../providers/types';
import type { Db } from '../store/db';
import type { TrailingInsert } from '../store/preceding-write';

/** A stored call: the call as it ended (without its error text), when, and why it was made. */
export interface ModelCallRow extends Omit<ModelCallEnd, 'error'> {
  id: string;
  at: number;
  /** UTC day, YYYY-MM-DD. */
  day: string;
  session_id: string | null;
  run_id: string | null;
  purpose: CallPurpose;
}

export type StatsKey = 'purpose' | 'model' | 'day';

export interface StatsRow {
  key: string;
  calls: number;
  errors: number;
  input_tokens: number;
  output_tokens: number;
  cost: number;
}

export interface Totals {
  calls: number;
  input_tokens: number;
  output_tokens: number;
  cost: number;
}

/** Async (issue 18): the PostgreSQL twin is ./pg-model-call-store.ts. */
export interface ModelCallStore {
  insert(row: ModelCallRow): Promise<void>;
  /**
   * PostgreSQL: `insert` as a write that rides in another statement (a step end's, p-pgfirst).
   * Absent (SQLite): rows are inserted alone.
   */
  insertWrite?(row: ModelCallRow, wrote: () => void): TrailingInsert;
  /** Grouped totals since `since` (ms epoch), largest cost first (days: newest first). */
  stats(by: StatsKey, since: number): Promise<StatsRow[]>;
  totals(filter: { sessionId?: string; day?: string; since?: number }): Promise<Totals>;
  list(filter: { sessionId?: string; runId?: string; limit: number }): Promise<ModelCallRow[]>;
}

const COLUMN: Record<StatsKey, string> = {
  purpose: 'purpose',
  model: "provider || '/' || model",
  day: 'day',
};

export function createModelCallStore(db: () => Db): ModelCallStore {
  return {
    async insert(row) {
      db()
        .prepare(
          `INSERT INTO model_calls (id, at, day, session_id, run_id, provider, model, purpose, input_tokens,
            output_tokens, reasoning_tokens, cached_input_tokens, cost, ttft_ms, duration_ms, status)
           VALUES (@id, @at, @day, @session_id, @run_id, @provider, @model, @purpose, @input_tokens,
            @output_tokens, @reasoning_tokens, @cached_input_tokens, @cost, @ttft_ms, @duration_ms, @status)`,
        )
        .run(row);
    },
    async stats(by, since) {
      const key = COLUMN[by];
      const order = by === 'day' ? 'key DESC' : 'cost DESC, key';
      return db()
        .prepare(
          `SELECT ${key} AS key, count(*) AS calls, coalesce(sum(status = 'error'), 0) AS errors,
                  coalesce(sum(input_tokens), 0) AS input_tokens, coalesce(sum(output_tokens), 0) AS output_tokens,
                  coalesce(sum(cost), 0) AS cost
           FROM model_calls WHERE at >= ? GROUP BY key ORDER BY ${order}`,
        )
        .all(since) as StatsRow[];
    },
    async totals(filter) {
      const where = whereClause({ session_id: filter.sessionId, day: filter.day, 'at >=': filter.since });
      return db()
        .prepare(
          `SELECT count(*) AS calls, coalesce(sum(input_tokens), 0) AS input_tokens,
                  coalesce(sum(output_tokens), 0) AS output_tokens, coalesce(sum(cost), 0) AS cost
           FROM model_calls ${where.sql}`,
        )
        .get(...where.params) as Totals;
    },
    async list(filter) {
      const where = whereClause({ session_id: filter.sessionId, run_id: filter.runId });
      return db()
        .prepare(`SELECT * FROM model_calls ${where.sql} ORDER BY at, id LIMIT ?`)
        .all(...where.params, filter.limit) as ModelCallRow[];
    },
  };
}

/**
 * `WHERE` over the conditions that are set: a key is a column (`= ?`) or a column and its
 * operator (`'at >='`); an undefined value leaves its condition out.
 */
function whereClause(conditions: Record<string, unknown>): { sql: string; params: unknown[] } {
  const set = Object.entries(conditions).filter(([, value]) => value !== undefined);
  if (set.length === 0) return { sql: '', params: [] };
  const sql = set.map(([key]) => (key.includes(' ') ? `${key} ?` : `${key} = ?`)).join(' AND ');
  return { sql: `WHERE ${sql}`, params: set.map(([, value]) => value) };
}
