/**
 * A client whose statements can be held or failed on demand, and the session log as stored: the
 * frame of the stop-in-the-gap tests (test/store/pg-held-stop.test.ts, pg-held-step.test.ts,
 * pg-last-step-end.test.ts).
 */
import type { SqlClient } from '../../src/store/postgres/client';

/**
 * A client whose statements `hold` picks wait until `open()`; `fail` picks statements that throw
 * (nothing sent). `held`: the texts waiting now; `failed`: the texts that threw.
 */
export function faultyClient(sql: SqlClient) {
  let gate: Promise<void> | undefined;
  let open = () => {};
  let hold: ((text: string, values: unknown[]) => boolean) | undefined;
  let fail: ((text: string, values: unknown[]) => boolean) | undefined;
  const held: string[] = [];
  const failed: string[] = [];
  const guard = <R>(send: (text: string, values?: unknown[]) => Promise<R>) => {
    return async (text: string, values: unknown[] = []): Promise<R> => {
      if (fail?.(text, values)) {
        fail = undefined;
        failed.push(text);
        throw new Error('injected: the release failed');
      }
      if (gate && hold?.(text, values)) {
        held.push(text);
        await gate;
      }
      return send(text, values);
    };
  };
  const client: SqlClient = {
    ...sql,
    one: guard(sql.one.bind(sql)) as SqlClient['one'],
    query: guard(sql.query.bind(sql)) as SqlClient['query'],
    run: guard(sql.run.bind(sql)) as SqlClient['run'],
  };
  return {
    client,
    held,
    failed,
    /** Statements `pick` matches wait from now until `open()`. */
    holdWhere(pick: (text: string, values: unknown[]) => boolean) {
      hold = pick;
      gate = new Promise((resolve) => {
        open = () => {
          gate = undefined;
          hold = undefined;
          resolve();
        };
      });
    },
    open: () => open(),
    /** The next statement `pick` matches throws. */
    failWhere(pick: (text: string, values: unknown[]) => boolean) {
      fail = pick;
    },
  };
}

/** The session's event types in id order from the log itself. */
export async function logged(sql: SqlClient, sessionId: string): Promise<string[]> {
  const rows = await sql.query<{ type: string }>(
    'SELECT type FROM session_events WHERE session_id = $1 ORDER BY id',
    [sessionId],
  );
  return rows.map((r) => r.type);
}
