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
import { fastTemplate, rawValues } from '../store/wide-row';
import { recentMap } from '../util/recent-map';
import type { SessionRow } from './types';

const FIXED_COLUMNS = ['id', 'parent_id', 'workspace', 'created_at'] as const;
type FixedColumns = Pick<SessionRow, (typeof FIXED_COLUMNS)[number]>;

export interface KnownSessionRows {
  /** Holds the fixed columns of a whole row (one this process inserted or read). */
  keep(row: SessionRow | undefined): void;
  /** The session was deleted by this process. */
  forget(id: string): void;
  /**
   * `text` (`UPDATE sessions SET … updated_at = ? WHERE id = ?`, `params` its values before the id,
   * the last `updatedAt`) answering the row while returning only the columns neither fixed nor
   * `updated_at`; undefined when there is no such session; false when its fixed columns are not
   * held (the caller returns `*`).
   */
  update(id: string, text: string, params: unknown[], updatedAt: number): SessionRow | undefined | false;
}

/** `columns`: the table's columns in their order (`SELECT *`). */
export function knownSessionRows(
  columns: readonly string[],
  prepare: (text: string) => Statement,
): KnownSessionRows {
  // session id → its fixed columns, the last 256 set (a compat request's start to its finish is
  // what it serves; a session read again is held again).
  const held = recentMap<FixedColumns>(256);
  const template = fastTemplate(columns);
  const fixed: readonly string[] = FIXED_COLUMNS;
  const answered = columns.filter((c) => !fixed.includes(c) && c !== 'updated_at');
  const returning = ` RETURNING ${answered.join(', ')}`;
  // update text → it with that RETURNING: one string a text, not one built a call.
  const texts = new Map<string, string>();
  const returningOf = (text: string): string => {
    let full = texts.get(text);
    if (full === undefined) {
      full = text + returning;
      texts.set(text, full);
    }
    return full;
  };
  return {
    keep(row) {
      if (!row || held.get(row.id)) return;
      const { id, parent_id, workspace, created_at } = row;
      held.set(id, { id, parent_id, workspace, created_at });
    },
    forget: (id) => held.delete(id),
    update(id, text, params, updatedAt) {
      const known = held.get(id);
      if (!known) return false;
      const values = rawValues(prepare(returningOf(text)), [...params, id]);
      if (!values) return undefined;
      // A copy of the template (fast properties, the table's key order), filled.
      const row: Record<string, unknown> = { ...template };
      for (const column of FIXED_COLUMNS) row[column] = known[column];
      row.updated_at = updatedAt;
      for (let i = 0; i < answered.length; i++) row[answered[i] as string] = values[i];
      return row as unknown as SessionRow;
    },
  };
}
