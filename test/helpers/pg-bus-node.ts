/**
 * A node of the PostgreSQL event-bus tests: a client on a throwaway cluster's database (fresh and
 * migrated, or an existing one by its url), the shared event log's store recording every statement
 * it sends in `sent`, and a bus on that log whose held publishes follow the client's transactions
 * (src/events/held-publishes.ts). What is opened is pushed onto `closers`, for the file's
 * `afterEach` to close in reverse.
 */
import { createEventBus, type EventBus } from '../../src/events/bus';
import { createPostgresEventStore } from '../../src/events/pg-event-store';
import { createPostgresClient, type SqlClient } from '../../src/store/postgres/client';
import { migratePostgres } from '../../src/store/postgres/migrate';
import { type PostgresCluster, recordingClient } from './postgres';

export type Closers = (() => Promise<void> | void)[];

export interface BusNode {
  url: string;
  sql: SqlClient;
  bus: EventBus;
  sent: string[];
}

/** A client of `url` with `pool_size` connections and the tests' timeouts. */
export const openClient = (url: string, pool_size = 4): Promise<SqlClient> =>
  createPostgresClient({ url, pool_size, statement_timeout_ms: 30_000, connect_timeout_ms: 5_000 });

/** A bus node on `url`, or on a new migrated database of `cluster`. */
export async function busNode(cluster: PostgresCluster, closers: Closers, url?: string): Promise<BusNode> {
  const target = url ?? (await cluster.createDatabase());
  const sql = await openClient(target);
  closers.push(() => sql.close());
  if (!url) await migratePostgres(sql);
  const sent: string[] = [];
  const store = createPostgresEventStore({ sql: recordingClient(sql, sent) });
  let now = 1_700_000_000_000;
  const bus = createEventBus({
    store: () => store,
    clock: { now: () => now++ },
    shared: true,
    transaction: () => sql.transactionNow(),
  });
  closers.push(() => bus.close());
  return { url: target, sql, bus, sent };
}
