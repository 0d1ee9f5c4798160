/**
 * The agent's own table, `agent_state`, on PostgreSQL (issue 18): the same answers as
 * ./agent-state-store.ts (the client's current session; an upsert the database decides).
 * @module
 */
import type { SqlClient } from '../store/postgres/client';
import type { AgentStateStore } from './agent-state-store';

const CURRENT_SESSION = 'current_session_id';

export function createPostgresAgentStateStore(deps: { sql: SqlClient }): AgentStateStore {
  const { sql } = deps;
  return {
    async currentSession() {
      const row = await sql.one<{ value: string }>('SELECT value FROM agent_state WHERE key = $1', [
        CURRENT_SESSION,
      ]);
      return row?.value ?? null;
    },
    async setCurrentSession(sessionId, now) {
      await sql.run(
        'INSERT INTO agent_state (key, value, updated_at) VALUES ($1, $2, $3) ON CONFLICT (key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at',
        [CURRENT_SESSION, sessionId, now],
      );
    },
    async clearCurrentSession() {
      await sql.run('DELETE FROM agent_state WHERE key = $1', [CURRENT_SESSION]);
    },
  };
}
