/**
 * Reads of pack hook runs (`pack_hook_runs`) across sessions, for the alerts readout: the runs
 * that failed or timed out since a time. Read-only; ./store.ts owns the writes.
 * @module
 */
import type { Db } from '../store/db';

export interface FailedHookRun {
  session_id: string;
  pack_name: string;
  hook_index: number;
  event: string;
  status: string;
  started_at: number;
}

export interface FailedHookRunFilter {
  since: number;
  sessionIds?: readonly string[];
}

/** The alerts' read (issue 18: async; PostgreSQL twin ./pg-hook-run-queries.ts). */
export interface HookRunQueries {
  /** Newest first; `sessionIds` limits them to those sessions (an empty list matches none). */
  failed(filter: FailedHookRunFilter): Promise<FailedHookRun[]>;
}

export function createHookRunQueries(db: () => Db): HookRunQueries {
  return { failed: (filter) => failedHookRuns(db(), filter) };
}

/** Newest first; `sessionIds` limits them to those sessions (an empty list matches none). */
export async function failedHookRuns(db: Db, filter: FailedHookRunFilter): Promise<FailedHookRun[]> {
  const sessions = filter.sessionIds;
  return db
    .prepare(
      `SELECT session_id, pack_name, hook_index, event, status, started_at FROM pack_hook_runs
        WHERE status != 'ok' AND started_at >= ?
        ${sessions ? `AND session_id IN (${sessions.map(() => '?').join(', ')})` : ''}
        ORDER BY id DESC`,
    )
    .all(filter.since, ...(sessions ?? [])) as FailedHookRun[];
}
