/**
 * The agent's own table, `agent_state` (key → value): the client's current session.
 * @module
 */
import type { Db } from '../store/db';

const CURRENT_SESSION = 'current_session_id';

/** Async (issue 18): the PostgreSQL twin is ./pg-agent-state-store.ts. */
export interface AgentStateStore {
  /** The stored current session id, if any (it may name a session since deleted). */
  currentSession(): Promise<string | null>;
  setCurrentSession(sessionId: string, now: number): Promise<void>;
  clearCurrentSession(): Promise<void>;
}

export function createAgentStateStore(db: () => Db): AgentStateStore {
  return {
    async currentSession() {
      const row = db().prepare('SELECT value FROM agent_state WHERE key = ?').get(CURRENT_SESSION) as
        | { value: string }
        | undefined;
      return row?.value ?? null;
    },
    async setCurrentSession(sessionId, now) {
      db()
        .prepare(
          'INSERT INTO agent_state (key, value, updated_at) VALUES (?, ?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at',
        )
        .run(CURRENT_SESSION, sessionId, now);
    },
    async clearCurrentSession() {
      db().prepare('DELETE FROM agent_state WHERE key = ?').run(CURRENT_SESSION);
    },
  };
}
