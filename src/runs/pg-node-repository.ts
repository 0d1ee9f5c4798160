/**
 * The nodes' heartbeat rows on PostgreSQL (`cluster_nodes`, migration 2): one per node, written
 * and renewed by the node, read by every node, removed on a clean close, or by a live node once
 * it has been silent for long (./pg-node-liveness.ts `prune`).
 * @module
 */
import type { SqlClient } from '../store/postgres/client';

export interface NodeRecord {
  id: string;
  host: string;
  pid: number;
  /** Milliseconds since the epoch by the database's clock. */
  heartbeat_at: number;
}

/** Every node's row, with the database's clock when it read them. */
export interface NodeRows {
  nodes: NodeRecord[];
  /** The database's time of the read, in milliseconds (undefined: no rows). */
  now: number | undefined;
}

export interface NodeRepository {
  /** The node's row, its heartbeat now by the database's clock (the row is written the first time). */
  beat(node: { id: string; host: string; pid: number }, startedAt: number): Promise<void>;
  all(): Promise<NodeRows>;
  remove(id: string): Promise<void>;
  /** The rows whose heartbeat is older than `silentMs` by the database's clock (long-dead nodes). */
  prune(silentMs: number): Promise<void>;
}

/**
 * The database's clock in milliseconds. Heartbeats are written and judged by it, so the clocks of
 * the nodes' machines never meet: a machine whose clock runs ahead cannot take a live node for
 * dead, and the time a read's answer spends on its way back does not count against the node.
 */
const DB_NOW_MS = '(extract(epoch FROM clock_timestamp()) * 1000)::bigint';

/** On the pool, never in a caller's transaction: other nodes must see a heartbeat at once. */
export function createPostgresNodeRepository({ sql }: { sql: SqlClient }): NodeRepository {
  return {
    async beat(node, startedAt) {
      await sql.autocommit.run(
        `INSERT INTO cluster_nodes (id, host, pid, url, started_at, heartbeat_at)
         VALUES ($1, $2, $3, NULL, $4, ${DB_NOW_MS})
         ON CONFLICT (id) DO UPDATE SET heartbeat_at = excluded.heartbeat_at`,
        [node.id, node.host, node.pid, startedAt],
      );
    },
    async all() {
      const rows = await sql.autocommit.query<NodeRecord & { db_now: number }>(
        `SELECT id, host, pid, heartbeat_at, ${DB_NOW_MS} AS db_now FROM cluster_nodes`,
      );
      return {
        nodes: rows.map(({ db_now: _, ...node }) => node),
        now: rows[0]?.db_now,
      };
    },
    async remove(id) {
      await sql.autocommit.run('DELETE FROM cluster_nodes WHERE id = $1', [id]);
    },
    async prune(silentMs) {
      await sql.autocommit.run(`DELETE FROM cluster_nodes WHERE heartbeat_at < ${DB_NOW_MS} - $1`, [
        silentMs,
      ]);
    },
  };
}
