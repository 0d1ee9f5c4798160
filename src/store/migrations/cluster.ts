import type { Migration } from './types';

/**
 * Cluster mode (ids 820–839, issue 18): the workspace lease (one mutating run per workspace,
 * across every process and node on the store) and the nodes' heartbeats.
 */
export const clusterMigrations: Migration[] = [
  {
    id: 820,
    name: 'workspace leases and node heartbeats',
    sql: `
      CREATE TABLE workspace_leases (
        workspace TEXT PRIMARY KEY,
        holder TEXT NOT NULL,
        run_id TEXT,
        node TEXT NOT NULL,
        acquired_at INTEGER NOT NULL,
        expires_at INTEGER NOT NULL
      );
      CREATE TABLE cluster_nodes (
        id TEXT PRIMARY KEY,
        host TEXT NOT NULL,
        pid INTEGER NOT NULL,
        url TEXT,
        started_at INTEGER NOT NULL,
        heartbeat_at INTEGER NOT NULL
      );
    `,
  },
];
