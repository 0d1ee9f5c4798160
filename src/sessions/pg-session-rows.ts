/**
 * The session row in a read scope (../store/read-scope.ts): its key, and the mark every write of
 * this process to it leaves (./pg-session-store.ts, and ./pg-message-store.ts, whose append
 * touches the session's updated_at). Likewise a mark per session for its messages: a run that
 * read its history with its prompt's append uses that list while this process wrote none of them.
 * @module
 */
import type { SqlClient } from '../store/postgres/client';
import { rowVersion, type TransactionEnd, wrote } from '../store/read-scope';
import { sessionRowKey } from './session-row-version';

/**
 * After this process wrote the session's row (again when the transaction it was part of ends).
 * `tx`: that transaction, taken when the statement was sent (by default now, just after its answer).
 */
export function wroteSession(sql: SqlClient, id: string, tx = sql.transactionNow()): void {
  wrote(sessionRowKey(id), tx);
}

/**
 * `write()`, a statement writing the session's row (and `also`'s), marking them written when it
 * fails too: a statement whose answer was lost may have committed (./pg-kept-sessions.ts).
 */
export async function marked<T>(
  sql: SqlClient,
  id: string,
  tx: TransactionEnd | undefined,
  write: () => Promise<T>,
  also: readonly string[] = [],
): Promise<T> {
  try {
    return await write();
  } catch (error) {
    for (const written of [id, ...also]) wroteSession(sql, written, tx);
    throw error;
  }
}

const messagesKey = (sessionId: string) => `messages:${sessionId}`;

/** After this process wrote (appended, updated, deleted) a message of the session. */
export function wroteMessages(sessionId: string): void {
  wrote(messagesKey(sessionId));
}

/** The write counter of the session's messages in this process (a hash collision moves it too). */
export function messagesVersion(sessionId: string): number {
  return rowVersion(messagesKey(sessionId));
}
