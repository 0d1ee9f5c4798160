/**
 * Usage statistics of the sessions and messages tables on PostgreSQL (issue 18): the same answers
 * as ./usage-queries.ts (text keys sort bytewise, as SQLite's do; token counts read from the
 * usage JSON).
 * @module
 */
import type { SqlClient } from '../store/postgres/client';
import type { SessionUsage, UsageQueries } from './usage-queries';

export function createPostgresUsageQueries(deps: { sql: SqlClient }): UsageQueries {
  const { sql } = deps;
  return {
    async sessionUsage() {
      const sessions = await sql.one<SessionUsage['sessions'] & Record<string, unknown>>(
        `SELECT count(*) AS total, count(*) FILTER (WHERE parent_id IS NULL) AS top,
              coalesce(sum(prompt_tokens), 0) AS tokens_in, coalesce(sum(completion_tokens), 0) AS tokens_out,
              coalesce(sum(cost), 0) AS cost FROM sessions`,
      );
      const byRole = await sql.query<SessionUsage['byRole'][number] & Record<string, unknown>>(
        'SELECT role, count(*) AS n FROM messages GROUP BY role ORDER BY role COLLATE "C"',
      );
      const models = await sql.query<SessionUsage['models'][number] & Record<string, unknown>>(
        `SELECT model, count(*) AS messages,
              coalesce(sum((usage::jsonb ->> 'input_tokens')::double precision), 0) AS input_tokens,
              coalesce(sum((usage::jsonb ->> 'output_tokens')::double precision), 0) AS output_tokens,
              coalesce(sum(cost), 0) AS cost
         FROM messages WHERE model IS NOT NULL AND usage IS NOT NULL
         GROUP BY model ORDER BY messages DESC, model COLLATE "C"`,
      );
      return {
        sessions: sessions ?? { total: 0, top: 0, tokens_in: 0, tokens_out: 0, cost: 0 },
        byRole,
        models,
      };
    },
  };
}
