/**
 * Reads a node keeps in memory on PostgreSQL (issue 18, item 6), the cluster-safe twin of
 * SQLite's `memoByDataVersion` (../data-version.ts): every compat request read the pending
 * recommendations (twice), the codebase summary row, the findings for the stale sweep and the
 * recording edit capsules, one round trip each, though these tables change rarely. PostgreSQL has
 * no data_version; instead a statement-level trigger on each table (migration 35,
 * ./migrations/table-changes.ts) notifies `TABLE_CHANGES_CHANNEL` with the table's name when a
 * write commits, and the node's LISTEN connection (src/events/pg-notify.ts, the bus's) tells this
 * process's `TableChanges`, which counts a generation per table.
 *
 * The rules that keep a kept value true:
 * - A value is kept only while the LISTEN is in place: before it is, while it is lost and until
 *   it is back, `generation` answers undefined, nothing is kept and nothing kept is answered
 *   (losing it or getting it back moves every table's generation: what was kept is dropped).
 * - A value is kept with the generation taken before its read started, and only if the
 *   generation is the same when the read has answered: a change notified meanwhile (or an own
 *   write begun) drops it. A change committed after the read's snapshot is notified after the
 *   LISTEN was in place, so it drops the value when it arrives: an answer from memory is at most
 *   one notification delay behind another node's commit (docs/cluster.md). This needs the read's
 *   snapshot taken when its statement starts, after the generation: READ COMMITTED, which every
 *   svc transaction is (PostgreSQL's default; ./client.ts's lazy BEGIN relies on it too).
 * - This process's own writes (`write`) move the generation before they start and again once
 *   they are committed or rolled back (the end of the transaction they ran in), and while one is
 *   in flight nothing is kept: a read of this process after its write returned never sees the
 *   table as before it, and a value read inside a transaction that wrote (uncommitted rows, maybe
 *   rolled back) is never kept.
 * @module
 */
import type { SqlClient } from './client';

/** The channel migration 35's triggers notify; the payload is the table's name. */
export const TABLE_CHANGES_CHANNEL = 'svc_table_changes';

/** The tables migrations 35, 40 and 43 watch. */
export type WatchedTable =
  | 'recommendations'
  | 'codebase_context_cache'
  | 'findings'
  | 'edit_capsules'
  | 'adaptive_sessions'
  | 'sessions';

/**
 * The tables whose notifications from this process's own connections are not counted: every write
 * this process makes to them marks the rows it wrote itself, when it answers (for `sessions`: the
 * session store's `wroteSession`, src/sessions/pg-kept-sessions.ts), so their own notification
 * tells nothing new. A connection of the pool that goes away moves their generation instead (its
 * write in flight may have committed unheard).
 */
const SELF_MARKED = new Set<string>(['sessions']);

/** What the LISTEN side (src/events/pg-notify.ts) tells a node's `TableChanges`. */
export interface TableChangeFeed {
  /**
   * A write to `table` committed (on any node, this one included); `pid`: the server process that
   * notified (the writer's connection).
   */
  changed(table: string, pid?: number): void;
  /** The LISTEN on `TABLE_CHANGES_CHANNEL` is in place (first connect or a reconnect). */
  listening(): void;
  /** The LISTEN connection is gone (or stopped): notifications may be missed from now on. */
  lost(): void;
}

export interface TableChanges extends TableChangeFeed {
  /**
   * The table's generation now: it moves with every change notified, own write and LISTEN loss or
   * return. Undefined while nothing may be kept (no LISTEN, or an own write of the table in flight).
   */
  generation(table: WatchedTable): number | undefined;
  /** Whether the LISTEN is in place. */
  isListening(): boolean;
  /** Runs an own write of `table` (see the module's rules). */
  write<T>(table: WatchedTable, fn: () => Promise<T>): Promise<T>;
}

const perClient = new WeakMap<SqlClient, TableChanges>();

/**
 * The change signal of `sql`'s database in this process: one per client, shared by its
 * repositories and fed by the listener the App starts on it (src/app/core.ts). A client no
 * listener feeds keeps nothing.
 */
export function tableChanges(sql: SqlClient): TableChanges {
  let changes = perClient.get(sql);
  if (!changes) {
    changes = createTableChanges(sql);
    perClient.set(sql, changes);
  }
  return changes;
}

export function createTableChanges(
  sql: Pick<SqlClient, 'inTransaction' | 'afterTransaction' | 'ownsBackend' | 'onConnectionGone'>,
): TableChanges {
  // One clock for every move: a table's generation is the later of its own last move and the
  // LISTEN's, so either moves it.
  let tick = 0;
  let listenMovedAt = 0;
  let listening = false;
  const movedAt = new Map<string, number>();
  const inFlight = new Map<string, number>();
  const move = (table: string) => {
    movedAt.set(table, ++tick);
  };
  sql.onConnectionGone?.(() => {
    for (const table of SELF_MARKED) move(table);
  });
  return {
    generation(table) {
      if (!listening || (inFlight.get(table) ?? 0) > 0) return undefined;
      return Math.max(listenMovedAt, movedAt.get(table) ?? 0);
    },
    isListening: () => listening,
    changed(table, pid) {
      // Only a client that knows its connections can tell its own notifications apart.
      if (pid !== undefined && SELF_MARKED.has(table) && sql.ownsBackend?.(pid)) return;
      move(table);
    },
    listening() {
      listening = true;
      listenMovedAt = ++tick;
    },
    lost() {
      listening = false;
      listenMovedAt = ++tick;
    },
    async write(table, fn) {
      move(table);
      inFlight.set(table, (inFlight.get(table) ?? 0) + 1);
      const done = () => {
        inFlight.set(table, (inFlight.get(table) ?? 1) - 1);
        move(table);
      };
      try {
        return await fn();
      } finally {
        // Inside a transaction the write is committed (or rolled back) only at its end.
        if (sql.inTransaction()) sql.afterTransaction(done);
        else done();
      }
    },
  };
}

/**
 * Values read from `table` by key, kept by `changes` (see the module's rules); `load` reads the
 * database. The caller runs its own writes of the table through `changes.write`.
 */
export function memoByTableChanges<K, V>(
  changes: TableChanges,
  table: WatchedTable,
  load: (key: K) => Promise<V>,
) {
  const held = new Map<K, { generation: number; value: V }>();
  return {
    async get(key: K): Promise<V> {
      const generation = changes.generation(table);
      const kept = held.get(key);
      if (kept && generation !== undefined && kept.generation === generation) return kept.value;
      if (kept) held.delete(key);
      const value = await load(key);
      if (generation !== undefined && changes.generation(table) === generation) {
        held.set(key, { generation, value });
      }
      return value;
    },
  };
}
