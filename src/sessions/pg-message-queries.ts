/**
 * Reads of stored messages on PostgreSQL (issue 18): the same answers as ./message-queries.ts (a
 * session's user and assistant messages, unordered; malformed parts read as none).
 * @module
 */
import type { SqlClient } from '../store/postgres/client';
import { type MessageQueries, partsOf } from './message-queries';
import type { Message } from './session-store';

export function createPostgresMessageQueries(deps: { sql: SqlClient }): MessageQueries {
  const { sql } = deps;
  return {
    async conversation(sessionId) {
      const rows = await sql.query<{ id: string; role: Message['role']; parts: string }>(
        "SELECT id, role, parts FROM messages WHERE session_id = $1 AND role IN ('user', 'assistant')",
        [sessionId],
      );
      return rows.map((row) => ({ id: row.id, role: row.role, parts: partsOf(row.parts) }));
    },
  };
}
