/**
 * A session row's key in a read scope (../store/read-scope.ts) and its write counter in this
 * process, for both stores: each store's writes of the row move it (SQLite's ./session-store.ts,
 * PostgreSQL's ./pg-session-rows.ts), and the agent's step end compares it (../agent/step-ends.ts)
 * to know whether a copy of the row it holds is still as fresh as a read. Apart from the
 * PostgreSQL module so that neither the SQLite store nor the agent imports a PostgreSQL one.
 * @module
 */
import { rowVersion } from '../store/read-scope';

/** A session row's key in a read scope. */
export const sessionRowKey = (id: string) => `sessions:${id}`;

/** The write counter of the session's row in this process (a hash collision moves it too). */
export function sessionRowVersion(id: string): number {
  return rowVersion(sessionRowKey(id));
}
