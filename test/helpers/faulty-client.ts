/**
 * A client whose statements can be held or failed on demand, and the session log as stored: the
 * frame of the stop-in-the-gap tests (test/store/pg-held-stop.test.ts, pg-held-step.test.ts,
 * pg-last-step-end.test.ts).
 */
import type { App } from '../../src/app';
import type { SqlClient } from '../../src/store/postgres/client';
import { until } from './until';

/** One of `SqlClient`'s statement senders (`one`, `query`, `run`). */
type Send<R> = (text: string, values?: unknown[]) => Promise<R>;

/** `sql` with every statement (its `one`, `query` and `run`) sent through `wrap`. */
export function wrappedClient(sql: SqlClient, wrap: <R>(send: Send<R>) => Send<R>): SqlClient {
  return {
    ...sql,
    one: wrap(sql.one.bind(sql)) as SqlClient['one'],
    query: wrap(sql.query.bind(sql)) as SqlClient['query'],
    run: wrap(sql.run.bind(sql)) as SqlClient['run'],
  };
}

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
  const client = wrappedClient(sql, guard);
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

/** The bus's own append of session events (`EventBus` write queue, PostgreSQL). */
export const BUS_APPEND = /svc_append_events_across/;

/**
 * The operator's cancel of `sessionId`'s run while the bus's write queue is busy: another
 * session's append held (`f`), released once the stop's tool message is stored. Without `f`
 * (SQLite), the cancel alone. Answers the tool messages stored when the queue was let go.
 */
export async function cancelBehindBusyQueue(
  app: App,
  sessionId: string,
  f: ReturnType<typeof faultyClient> | undefined,
): Promise<number> {
  if (f) {
    f.holdWhere((text, values) => BUS_APPEND.test(text) && JSON.stringify(values[0]).includes('ses_other'));
    app.bus.publish('ses_other', 'queue.changed', { n: 1 });
    await until(() => f.held.length === 1, 'the other session`s append is under way');
  }
  await app.agent.cancel(sessionId);
  if (!f) return 0;
  // The release's INSERT answers while the queue is still busy, then the queue goes on.
  let toolRows = 0;
  await until(async () => {
    const row = await f.client.autocommit.one<{ n: number }>(
      "SELECT count(*)::int AS n FROM messages WHERE session_id = $1 AND role = 'tool'",
      [sessionId],
    );
    toolRows = row?.n ?? 0;
    return toolRows === 1;
  }, 'the released tool message is stored');
  if (f.held.length !== 1)
    throw new Error(`expected the other session's append still held, ${f.held.length} held`);
  f.open();
  return toolRows;
}
