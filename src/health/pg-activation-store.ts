/**
 * `health_activations` on PostgreSQL (issue 18): the twin of ./activation-store.ts, the same
 * answers (newest first; the actions JSON parsed; event_published a boolean). Rows of one
 * millisecond come newest id first (ids are creation-ordered), where SQLite uses its rowid.
 * @module
 */
import type { SqlClient } from '../store/postgres/client';
import { type ActivationStore, activationValues, type HealthActivation } from './activation-store';

type Row = Omit<HealthActivation, 'actions' | 'event_published'> & {
  actions: string;
  event_published: number;
};

export function createPostgresActivationStore(deps: { sql: SqlClient }): ActivationStore {
  const { sql } = deps;
  return {
    async insert(a) {
      await sql.run(
        `INSERT INTO health_activations (id, session_id, run_id, signal, rule_id, outcome, actions,
           actions_planned, actions_run, reason, ratio, event_published, created_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)`,
        activationValues(a),
      );
    },
    async list(filter = {}) {
      const rows = await sql.query<Row>(
        `SELECT id, session_id, run_id, signal, rule_id, outcome, actions, actions_planned, actions_run,
                reason, ratio, event_published, created_at
           FROM health_activations
          WHERE ($1::text IS NULL OR session_id = $1) AND created_at >= $2
          ORDER BY created_at DESC, id COLLATE "C" DESC LIMIT $3`,
        [filter.sessionId ?? null, filter.since ?? 0, filter.limit ?? 50],
      );
      return rows.map((row) => ({
        ...row,
        actions: JSON.parse(row.actions) as string[],
        event_published: row.event_published === 1,
      }));
    },
  };
}
