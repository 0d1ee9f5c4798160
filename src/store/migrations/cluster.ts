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
  {
    // issue 19 item 4: stored permission requests of runs. Written and read only on PostgreSQL
    // (src/permissions/pg-permission-request-repository.ts); here so both histories hold the same
    // tables (a request on SQLite is a wait in the process that runs the agent).
    id: 835,
    name: 'permission_requests (durable approvals)',
    sql: `
      CREATE TABLE permission_requests (
        request_id TEXT PRIMARY KEY,
        session_id TEXT NOT NULL,
        root_session_id TEXT NOT NULL,
        run_id TEXT NOT NULL,
        tool_call_id TEXT,
        tool TEXT NOT NULL,
        title TEXT NOT NULL,
        scope TEXT,
        safe INTEGER NOT NULL DEFAULT 0,
        details TEXT,
        created_at INTEGER NOT NULL,
        expires_at INTEGER NOT NULL,
        decision TEXT,
        decided_by TEXT,
        message TEXT,
        decided_at INTEGER,
        closed_at INTEGER
      );
    `,
  },
];
