/**
 * Persistence of health follow-on activations (table `health_activations`, migration 540): one row
 * per activation, dispatched or skipped, so every process (a CLI reading a server's data dir)
 * sees the same history. Metadata only.
 * @module
 */
import type { Db } from '../store/db';
import { statementCache } from '../store/statement-cache';

export type ActivationOutcome = 'dispatched' | 'skipped';

export interface HealthActivation {
  id: string;
  session_id: string;
  run_id: string | null;
  /** The signal family, e.g. token_pressure (the `health.token_pressure` signal). */
  signal: string;
  rule_id: string;
  outcome: ActivationOutcome;
  /** The actions the rule planned, in order (compact, summarize). */
  actions: string[];
  actions_planned: number;
  actions_run: number;
  /** Why it was skipped (process_hour_cap, session_hour_cap, no_active_run, session_busy…). */
  reason: string | null;
  /** Context ratio that fired the signal. */
  ratio: number | null;
  /** Whether `health_followon.activation` was published for it (all five gates held). */
  event_published: boolean;
  created_at: number;
}

/** The insert's parameters in column order (id … created_at), for both backends. */
export const activationValues = (a: HealthActivation): unknown[] => [
  a.id,
  a.session_id,
  a.run_id,
  a.signal,
  a.rule_id,
  a.outcome,
  JSON.stringify(a.actions),
  a.actions_planned,
  a.actions_run,
  a.reason,
  a.ratio,
  a.event_published ? 1 : 0,
  a.created_at,
];

export interface ActivationStore {
  insert(activation: HealthActivation): Promise<void>;
  list(filter?: { sessionId?: string; since?: number; limit?: number }): Promise<HealthActivation[]>;
}

interface Row extends Omit<HealthActivation, 'actions' | 'event_published'> {
  actions: string;
  event_published: number;
}

export function createActivationStore(db: () => Db): ActivationStore {
  const sql = statementCache(db);
  return {
    async insert(a) {
      sql(
        `INSERT INTO health_activations (id, session_id, run_id, signal, rule_id, outcome, actions,
           actions_planned, actions_run, reason, ratio, event_published, created_at)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      ).run(...activationValues(a));
    },
    async list(filter = {}) {
      const rows = sql(
        `SELECT * FROM health_activations
          WHERE (? IS NULL OR session_id = ?) AND created_at >= ?
          ORDER BY created_at DESC, rowid DESC LIMIT ?`,
      ).all(
        filter.sessionId ?? null,
        filter.sessionId ?? null,
        filter.since ?? 0,
        filter.limit ?? 50,
      ) as Row[];
      return rows.map((row) => ({
        ...row,
        actions: JSON.parse(row.actions) as string[],
        event_published: row.event_published === 1,
      }));
    },
  };
}
