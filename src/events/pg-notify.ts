/**
 * The cross-node wake-up for the event log on PostgreSQL (issue 18): one dedicated connection
 * that LISTENs on `svc_events` (./pg-event-store.ts notifies there after an append commits) and
 * calls subscribers with the session and event id. The table stays the source of truth: a
 * subscriber reads the events after its last id from it. When the connection drops, the listener
 * reconnects by itself (after `reconnectDelayMs`, again until it succeeds) and then calls every
 * subscriber's `resync`, since notifications sent while it was away are lost: the subscriber
 * re-reads from its last id, so no event is missed. `followOtherNodes` makes a bus (./bus.ts)
 * follow the listener: the App's bus on a postgres store (src/app/core.ts).
 *
 * The same connection LISTENs on `svc_table_changes` (migration 35): a subscriber's `tableChanged`
 * hears of every committed write to the tables nodes keep reads of in memory, and its `lost` when
 * the connection drops (every notification from then on until the reconnect's `resync` may be
 * missed); `followOtherNodes` feeds them to the client's `TableChanges`
 * (src/store/postgres/table-changes.ts).
 * @module
 */
import type { Client } from 'pg';
import type { SqlClient } from '../store/postgres/client';
import { TABLE_CHANGES_CHANNEL, type TableChangeFeed } from '../store/postgres/table-changes';
import { EVENTS_CHANNEL } from './pg-event-store';

export interface EventNotice {
  sessionId: string;
  eventId: number;
}

export interface EventSubscriber {
  /** An event was committed (possibly on another node); a subscriber without it is not called. */
  event?(notice: EventNotice): void;
  /** The listener reconnected: notices may have been missed, re-read from the last id. */
  resync(): void;
  /**
   * A write to a watched table committed (possibly on another node); the payload is its name,
   * `pid` the server process that notified.
   */
  tableChanged?(table: string, pid?: number): void;
  /** The listening connection dropped or was closed: notices are missed until the next `resync`. */
  lost?(): void;
}

export interface EventListener {
  /** Resolves once the first LISTEN is in place. */
  ready: Promise<void>;
  subscribe(subscriber: EventSubscriber): () => void;
  /** The backend pid of the listening connection (undefined while reconnecting). */
  backendPid(): number | undefined;
  close(): Promise<void>;
}

/** `<session id>:<event id>`; the session id may itself hold colons. */
export function parseNotice(payload: string | undefined): EventNotice | undefined {
  if (!payload) return undefined;
  const at = payload.lastIndexOf(':');
  const eventId = Number(payload.slice(at + 1));
  if (at <= 0 || !Number.isInteger(eventId)) return undefined;
  return { sessionId: payload.slice(0, at), eventId };
}

/**
 * Listens on its own connection: to `url`, or a connection outside the App's pool (`sql`, with the
 * pool's settings). Resolves once the first LISTEN is in place; rejects when that first connect fails.
 */
export async function createEventListener(options: {
  url?: string;
  sql?: Pick<SqlClient, 'dedicated'>;
  reconnectDelayMs?: number;
}): Promise<EventListener> {
  const { sql, url } = options;
  let open: () => Client;
  if (sql) open = () => sql.dedicated('svc-listen');
  else if (url !== undefined) {
    const pg = await import('pg');
    const driver = pg.default ?? pg;
    open = () => new driver.Client({ connectionString: url, application_name: 'svc-listen' });
  } else throw new Error('createEventListener: give url or sql');
  const delay = options.reconnectDelayMs ?? 1_000;
  // Copied on subscribe and unsubscribe, not on every notification: a node hears its own appends
  // and session writes too (≈ 7 notifications a PostgreSQL agent step), so a notification is
  // handed over as it is read, with no copy of the subscribers and no closure; a subscriber added
  // or removed meanwhile changes the next one's list, as the copy did.
  let subscribers: readonly EventSubscriber[] = [];
  // Those that take events and those that take table changes (a table-change follower takes none).
  let eventTakers: readonly EventSubscriber[] = [];
  let tableTakers: readonly EventSubscriber[] = [];
  const setSubscribers = (next: readonly EventSubscriber[]) => {
    subscribers = next;
    eventTakers = next.filter((s) => s.event !== undefined);
    tableTakers = next.filter((s) => s.tableChanged !== undefined);
  };
  let client: Client | undefined;
  let pid: number | undefined;
  let closed = false;
  let timer: NodeJS.Timeout | undefined;

  const each = (fn: (s: EventSubscriber) => void) => {
    for (const s of subscribers) {
      try {
        fn(s);
      } catch {
        // one subscriber's failure does not stop the others
      }
    }
  };
  const notified = (notice: EventNotice) => {
    for (const s of eventTakers) {
      try {
        s.event?.(notice);
      } catch {
        // one subscriber's failure does not stop the others
      }
    }
  };
  const tableChanged = (table: string, processId: number | undefined) => {
    for (const s of tableTakers) {
      try {
        s.tableChanged?.(table, processId);
      } catch {
        // one subscriber's failure does not stop the others
      }
    }
  };

  const connect = async (): Promise<void> => {
    const next: Client = open();
    let dropped = false;
    const drop = () => {
      if (dropped) return;
      dropped = true;
      if (client === next) {
        client = undefined;
        pid = undefined;
      }
      next.end().catch(() => {});
      each((s) => s.lost?.());
      schedule();
    };
    next.on('error', drop);
    next.on('end', drop);
    next.on('notification', (message) => {
      if (message.channel === TABLE_CHANGES_CHANNEL) {
        if (message.payload) tableChanged(message.payload, message.processId);
        return;
      }
      if (message.channel !== EVENTS_CHANNEL || !eventTakers.length) return;
      const notice = parseNotice(message.payload);
      if (notice) notified(notice);
    });
    try {
      await next.connect();
      await next.query(`LISTEN ${EVENTS_CHANNEL}; LISTEN ${TABLE_CHANGES_CHANNEL}`);
      const row = (await next.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0];
      pid = row?.pid;
    } catch (error) {
      dropped = true;
      next.end().catch(() => {});
      throw error;
    }
    if (closed) {
      await next.end().catch(() => {});
      return;
    }
    client = next;
  };

  const schedule = () => {
    if (closed || timer) return;
    timer = setTimeout(() => {
      timer = undefined;
      connect().then(
        () => each((s) => s.resync()),
        () => schedule(),
      );
    }, delay);
  };

  const ready = connect();
  await ready;
  return {
    ready,
    subscribe(subscriber) {
      if (!subscribers.includes(subscriber)) setSubscribers([...subscribers, subscriber]);
      return () => setSubscribers(subscribers.filter((s) => s !== subscriber));
    },
    backendPid: () => pid,
    async close() {
      closed = true;
      if (timer) clearTimeout(timer);
      const current = client;
      client = undefined;
      await current?.end().catch(() => {});
    },
  };
}

/**
 * Makes a bus on the PostgreSQL log follow other nodes' appends (issue 18): a listener on a
 * connection of its own (`sql.dedicated`), started now; when its first connect fails it is tried
 * again every `retryMs` until it succeeds or `stop` is called. Once it listens, the bus catches up
 * its listened sessions (events committed before the LISTEN) and `changes` (the client's table
 * change signal) is told it listens; `stop` ends the listener and tells `changes` it is lost.
 */
export function followOtherNodes(
  bus: { follow(feed: EventFeedLike): () => void },
  sql: Pick<SqlClient, 'dedicated'>,
  options: {
    onError?: (error: unknown) => void;
    reconnectDelayMs?: number;
    retryMs?: number;
    changes?: TableChangeFeed;
  } = {},
): { started: Promise<void>; stop(): Promise<void> } {
  let stopped = false;
  let listener: EventListener | undefined;
  let unfollow: (() => void) | undefined;
  let unwatch: (() => void) | undefined;
  const { changes } = options;
  let retry: NodeJS.Timeout | undefined;
  let resolveStarted: () => void = () => {};
  const started = new Promise<void>((resolve) => {
    resolveStarted = resolve;
  });
  const start = () => {
    createEventListener({ sql, reconnectDelayMs: options.reconnectDelayMs }).then(
      async (opened) => {
        if (stopped) {
          await opened.close();
          return;
        }
        listener = opened;
        unfollow = bus.follow({
          subscribe(subscriber) {
            const off = opened.subscribe(subscriber);
            subscriber.resync();
            return off;
          },
        });
        if (changes) {
          // No `event`: the table-change follower is not called for the event notices.
          unwatch = opened.subscribe({
            resync: () => changes.listening(),
            tableChanged: (table, pid) => changes.changed(table, pid),
            lost: () => changes.lost(),
          });
          changes.listening();
        }
        resolveStarted();
      },
      (error: unknown) => {
        options.onError?.(error);
        if (!stopped) retry = setTimeout(start, options.retryMs ?? 2_000);
      },
    );
  };
  start();
  return {
    started,
    async stop() {
      stopped = true;
      if (retry) clearTimeout(retry);
      unfollow?.();
      unwatch?.();
      changes?.lost();
      await listener?.close();
    },
  };
}

/** The feed a bus follows (./bus.ts `EventFeed`), restated to keep this module free of the bus. */
type EventFeedLike = { subscribe(subscriber: EventSubscriber): () => void };
