/**
 * Reads of pack hook runs (`pack_hook_runs`) across sessions, for the alerts readout: the runs
 * that failed or timed out since a time. Read-only; ./store.ts owns the writes. Async (issue 18):
 * `HookRunQueries`, with its PostgreSQL twin in ./pg-hook-run-queries.ts.
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

export interface HookRunQueries {
  /** Newest first; `sessionIds` limits them to those sessions (an empty list matches none). */
  failed(filter: { since: number; sessionIds?: readonly string[] }): Promise<FailedHookRun[]>;
}

export function createHookRunQueries(db: () => Db): HookRunQueries {
  return { failed: async (filter) => failedHookRuns(db(), filter) };
}

function failedHookRuns(db: Db, filter: { since: number; sessionIds?: readonly string[] }): FailedHookRun[] {
  const sessions = filter.sessionIds;
  return db
    .prepare(
      `SELECT session_id, pack_name, hook_index, event, status, started_at FROM pack_hook_runs
        WHERE status != 'ok' AND started_at >= ?
        ${sessions ? `AND session_id IN (${sessions.map(() => '?').join(', ') || 'NULL'})` : ''}
        ORDER BY id DESC`,
    )
    .all(filter.since, ...(sessions ?? [])) as FailedHookRun[];
}
