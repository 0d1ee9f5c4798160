/**
 * Reads of stored messages for the read models that need only the conversation (the journal):
 * the prompts and answers of a session, never its tool messages (large outputs).
 * @module
 */
import type { Db } from '../store/db';
import type { Message } from './session-store';

export type ConversationMessage = Pick<Message, 'id' | 'role' | 'parts'>;

/** Async (issue 18): the PostgreSQL twin is ./pg-message-queries.ts. */
export interface MessageQueries {
  /** A session's user and assistant messages (unordered); malformed parts read as none. */
  conversation(sessionId: string): Promise<ConversationMessage[]>;
}

export function createMessageQueries(db: () => Db): MessageQueries {
  return { conversation: async (sessionId) => conversationNow(db(), sessionId) };
}

/** A session's user and assistant messages (unordered), on SQLite: as the journal calls it. */
export async function conversationMessages(db: Db, sessionId: string): Promise<ConversationMessage[]> {
  return await createMessageQueries(() => db).conversation(sessionId);
}

function conversationNow(db: Db, sessionId: string): ConversationMessage[] {
  const rows = db
    .prepare("SELECT id, role, parts FROM messages WHERE session_id = ? AND role IN ('user', 'assistant')")
    .all(sessionId) as { id: string; role: Message['role']; parts: string }[];
  return rows.map((row) => ({ id: row.id, role: row.role, parts: partsOf(row.parts) }));
}

export function partsOf(text: string): Message['parts'] {
  try {
    const parts = JSON.parse(text) as unknown;
    return Array.isArray(parts) ? (parts as Message['parts']) : [];
  } catch {
    return [];
  }
}
