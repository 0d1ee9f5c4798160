/**
 * A SQLite session's fixed columns known beyond the statement that wrote or read them (issue 17
 * item 3, p-sqlusage; p-sqlrow Left 2): a step's usage UPDATE (`addUsage`, `closeStep`: one a
 * compat request) returns only the columns some writer may change, when this process holds the
 * session's fixed ones from a row it inserted or read whole; where `RETURNING *` read back all 14.
 * Fixed: the columns no SQLite `UPDATE sessions` sets (every writer of the table is
 * ./session-store.ts, `create`, `update`, `addUsage` and `delete`, and ./message-store.ts's
 * `updated_at`: `grep -rn "UPDATE sessions" src` outside `pg-*`): a session's id, parent, workspace
 * and `created_at`. They hold for as long as the row exists, whoever writes the others (another
 * connection, another process, a transaction rolled back or not): a session id is never used again
 * (`ids.next('ses')`, a ULID), a session this process deletes is forgotten, and a row that is gone
 * answers nothing, as `RETURNING *` did. The rest (title, mode, agent, model, metadata, the usage)
 * is read back with the update, never kept.
 * @module
 */
import type { Statement } from 'better-sqlite3';
import { type KnownRows, knownRows } from '../store/known-rows';
import type { SessionRow } from './types';

const FIXED_COLUMNS: readonly string[] = ['id', 'parent_id', 'workspace', 'created_at'];

export type KnownSessionRows = KnownRows<SessionRow>;

/** `columns`: the table's columns in their order (`SELECT *`). */
export function knownSessionRows(
  columns: readonly string[],
  prepare: (text: string) => Statement,
): KnownSessionRows {
  return knownRows<SessionRow>(columns, FIXED_COLUMNS, prepare);
}
