/**
 * The three ways svc sends a PostgreSQL statement (./client.ts): on the pool, in a transaction,
 * alone. Its own module so the transaction's parts (./transaction-root.ts) name it without a cycle.
 * @module
 */
import type { QueryResultRow } from 'pg';

/** Statements on one connection (the pool, or the connection a transaction holds). */
export interface SqlExecutor {
  /** Every row. Parameters are `$1`, `$2`, …; values are never spliced into the text. */
  query<T extends QueryResultRow = QueryResultRow>(text: string, params?: readonly unknown[]): Promise<T[]>;
  /** The first row, undefined when there is none. */
  one<T extends QueryResultRow = QueryResultRow>(
    text: string,
    params?: readonly unknown[],
  ): Promise<T | undefined>;
  /** The number of rows the statement changed. */
  run(text: string, params?: readonly unknown[]): Promise<number>;
}
