/**
 * The nodes' heartbeat rows on PostgreSQL (`cluster_nodes`, migration 2): one per node, written
 * and renewed by the node, read by every node, removed on a clean close (./pg-node-liveness.ts).
 * @module
 */
import type { SqlClient } from '../store/postgres/client';

export interface NodeRecord {
  id: string;
  host: string;
  pid: number;
  heartbeat_at: number;
}

export interface NodeRepository {
  /** The node's row, its heartbeat now (the row is written the first time). */
  beat(node: { id: string; host: string; pid: number }, now: number): Promise<void>;
  all(): Promise<NodeRecord[]>;
  remove(id: string): Promise<void>;
}

/** On the pool, never in a caller's transaction: other nodes must see a heartbeat at once. */
export function createPostgresNodeRepository({ sql }: { sql: SqlClient }): NodeRepository {
  return {
    async beat(node, now) {
      await sql.autocommit.run(
        `INSERT INTO cluster_nodes (id, host, pid, url, started_at, heartbeat_at)
         VALUES ($1, $2, $3, NULL, $4, $4)
         ON CONFLICT (id) DO UPDATE SET heartbeat_at = excluded.heartbeat_at`,
        [node.id, node.host, node.pid, now],
      );
    },
    all: () => sql.autocommit.query<NodeRecord>('SELECT id, host, pid, heartbeat_at FROM cluster_nodes'),
    async remove(id) {
      await sql.autocommit.run('DELETE FROM cluster_nodes WHERE id = $1', [id]);
    },
  };
}
