/**
 * Usage statistics of the sessions and messages tables (the usage_stats readout): session counts
 * and token totals, messages by role, and per-model message usage.
 * @module
 */
import type { Db } from '../store/db';

export interface SessionUsage {
  sessions: { total: number; top: number; tokens_in: number; tokens_out: number; cost: number };
  byRole: { role: string; n: number }[];
  models: { model: string; messages: number; input_tokens: number; output_tokens: number; cost: number }[];
}

/** Async (issue 18): the PostgreSQL twin is ./pg-usage-queries.ts. */
export interface UsageQueries {
  sessionUsage(): Promise<SessionUsage>;
}

export function createUsageQueries(db: () => Db): UsageQueries {
  return { sessionUsage: async () => sessionUsageNow(db()) };
}

/** The usage statistics on SQLite, as the usage_stats readout calls it. */
export async function sessionUsage(db: Db): Promise<SessionUsage> {
  return await createUsageQueries(() => db).sessionUsage();
}

function sessionUsageNow(db: Db): SessionUsage {
  const sessions = db
    .prepare(
      `SELECT count(*) AS total, coalesce(sum(parent_id IS NULL), 0) AS top,
            coalesce(sum(prompt_tokens), 0) AS tokens_in, coalesce(sum(completion_tokens), 0) AS tokens_out,
            coalesce(sum(cost), 0) AS cost FROM sessions`,
    )
    .get() as SessionUsage['sessions'];
  const byRole = db
    .prepare('SELECT role, count(*) AS n FROM messages GROUP BY role ORDER BY role')
    .all() as SessionUsage['byRole'];
  const models = db
    .prepare(
      `SELECT model, count(*) AS messages,
            coalesce(sum(json_extract(usage, '$.input_tokens')), 0) AS input_tokens,
            coalesce(sum(json_extract(usage, '$.output_tokens')), 0) AS output_tokens,
            coalesce(sum(cost), 0) AS cost
     FROM messages WHERE model IS NOT NULL AND usage IS NOT NULL GROUP BY model ORDER BY messages DESC, model`,
    )
    .all() as SessionUsage['models'];
  return { sessions, byRole, models };
}
