/**
 * The session row in a read scope (../store/read-scope.ts): its key, and the mark every write of
 * this process to it leaves (./pg-session-store.ts, and ./pg-message-store.ts, whose append
 * touches the session's updated_at).
 * @module
 */
import type { SqlClient } from '../store/postgres/client';
import { wrote } from '../store/read-scope';

/** A session row's key in a read scope. */
export const sessionRowKey = (id: string) => `sessions:${id}`;

/** After this process wrote the session's row (again when the transaction it is in ends). */
export function wroteSession(sql: SqlClient, id: string): void {
  wrote(sessionRowKey(id), sql.inTransaction() ? (fn) => sql.afterTransaction(fn) : undefined);
}
