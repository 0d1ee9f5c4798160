/**
 * PostgreSQL migration 2 (issue 18): the workspace lease and the nodes' heartbeats, as SQLite's
 * migration 820 (src/store/migrations/cluster.ts).
 * @module
 */
export const clusterDdl = `
CREATE TABLE workspace_leases (
  workspace TEXT PRIMARY KEY,
  holder TEXT NOT NULL,
  run_id TEXT,
  node TEXT NOT NULL,
  acquired_at BIGINT NOT NULL,
  expires_at BIGINT NOT NULL
);
CREATE TABLE cluster_nodes (
  id TEXT PRIMARY KEY,
  host TEXT NOT NULL,
  pid BIGINT NOT NULL,
  url TEXT,
  started_at BIGINT NOT NULL,
  heartbeat_at BIGINT NOT NULL
);
`;
