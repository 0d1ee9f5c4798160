/**
 * Processes svc started, as the run ledger records them (`process_started`, `process_exited`,
 * `process_reaped` events, written by src/sandbox/spawn.ts and ./process-reaper.ts): the ones with
 * no end recorded are the candidates a later svc reaps.
 * @module
 */
import type { Db } from '../store/db';
import { statementCache } from '../store/statement-cache';
import { flushHeld } from '../store/transaction-memo';

export interface PendingProcess {
  run_id: string;
  session_id: string;
  /** The `process_started` payload: pid, start_time, boot_id, host, owner, kind, command. */
  payload: Record<string, unknown>;
}

/** Async (issue 18): the SQLite implementation below resolves at once. */
export interface ProcessRepository {
  /** Started since `sinceMs` (ledger time) with neither an exit nor a reap recorded, oldest first. */
  pending(sinceMs: number, limit?: number): Promise<PendingProcess[]>;
}

export function createProcessRepository(db: () => Db): ProcessRepository {
  const sql = statementCache(db);
  return {
    async pending(sinceMs, limit = 500) {
      flushHeld(db()); // the run events a transaction of this handle holds (./run-events.ts)
      const rows = sql(
        `SELECT e.run_id, e.session_id, e.payload FROM agent_run_events e
         WHERE e.type = 'process_started' AND e.created_at >= ?
           AND NOT EXISTS (
             SELECT 1 FROM agent_run_events x
             WHERE x.run_id = e.run_id AND x.type IN ('process_exited', 'process_reaped')
               AND json_extract(x.payload, '$.pid') = json_extract(e.payload, '$.pid'))
         ORDER BY e.id LIMIT ?`,
      ).all(sinceMs, limit) as { run_id: string; session_id: string; payload: string }[];
      return rows.map((row) => ({ ...row, payload: JSON.parse(row.payload) as Record<string, unknown> }));
    },
  };
}
