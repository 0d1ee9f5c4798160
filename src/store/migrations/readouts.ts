import type { Migration } from './types';

export const readoutMigrations: Migration[] = [
  {
    id: 500,
    name: 'workspace claims and markers',
    sql: `
      CREATE TABLE workspace_claims (
        id TEXT PRIMARY KEY,
        session_id TEXT NOT NULL,
        paths TEXT NOT NULL,
        mode TEXT NOT NULL CHECK (mode IN ('soft', 'hard')),
        reason TEXT NOT NULL DEFAULT '',
        created_at INTEGER NOT NULL,
        renewed_at INTEGER NOT NULL,
        expires_at INTEGER NOT NULL,
        released_at INTEGER,
        release_reason TEXT
      );
      CREATE INDEX workspace_claims_active ON workspace_claims(released_at, expires_at);

      CREATE TABLE claim_negotiations (
        id TEXT PRIMARY KEY,
        claim_id TEXT NOT NULL REFERENCES workspace_claims(id) ON DELETE CASCADE,
        from_session_id TEXT NOT NULL,
        message TEXT NOT NULL DEFAULT '',
        created_at INTEGER NOT NULL,
        outcome TEXT NOT NULL DEFAULT 'pending'
      );

      CREATE TABLE workspace_markers (
        id TEXT PRIMARY KEY,
        session_id TEXT NOT NULL,
        path TEXT NOT NULL,
        kind TEXT NOT NULL DEFAULT 'note',
        message TEXT NOT NULL,
        created_at INTEGER NOT NULL,
        expires_at INTEGER
      );
      CREATE INDEX workspace_markers_path ON workspace_markers(path);
    `,
  },
  {
    id: 501,
    name: 'recommendation outcome ledger',
    sql: `
      CREATE TABLE recommendations (
        id TEXT PRIMARY KEY,
        zone TEXT NOT NULL,
        kind TEXT NOT NULL,
        recommended_at INTEGER NOT NULL,
        session_id TEXT,
        run_id TEXT,
        payload_digest TEXT NOT NULL DEFAULT '',
        outcome TEXT NOT NULL DEFAULT 'pending' CHECK (outcome IN ('pending', 'followed', 'dismissed', 'expired')),
        outcome_at INTEGER,
        evidence TEXT NOT NULL DEFAULT '{}',
        window_seconds INTEGER NOT NULL
      );
      CREATE INDEX recommendations_zone ON recommendations(zone, recommended_at);
      CREATE INDEX recommendations_session ON recommendations(session_id, outcome);
    `,
  },
];
