import type { Migration } from './types';

export const foundationMigrations: Migration[] = [
  {
    id: 1,
    name: 'sessions and messages',
    sql: `
      CREATE TABLE sessions (
        id TEXT PRIMARY KEY,
        parent_id TEXT REFERENCES sessions(id) ON DELETE CASCADE,
        title TEXT NOT NULL DEFAULT '',
        mode TEXT NOT NULL DEFAULT 'build',
        agent TEXT NOT NULL DEFAULT 'build',
        model TEXT,
        reasoning_effort TEXT,
        workspace TEXT NOT NULL DEFAULT '',
        prompt_tokens INTEGER NOT NULL DEFAULT 0,
        completion_tokens INTEGER NOT NULL DEFAULT 0,
        cost REAL NOT NULL DEFAULT 0,
        metadata TEXT NOT NULL DEFAULT '{}',
        created_at INTEGER NOT NULL,
        updated_at INTEGER NOT NULL
      );
      CREATE INDEX sessions_parent ON sessions(parent_id);
      CREATE INDEX sessions_updated ON sessions(updated_at);

      CREATE TABLE messages (
        id TEXT PRIMARY KEY,
        session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
        role TEXT NOT NULL CHECK (role IN ('user', 'assistant', 'system', 'tool')),
        parts TEXT NOT NULL DEFAULT '[]',
        model TEXT,
        provider TEXT,
        usage TEXT,
        cost REAL NOT NULL DEFAULT 0,
        run_id TEXT,
        created_at INTEGER NOT NULL,
        updated_at INTEGER NOT NULL,
        finished_at INTEGER
      );
      CREATE INDEX messages_session ON messages(session_id, created_at);
    `,
  },
  {
    id: 2,
    name: 'session event log',
    sql: `
      CREATE TABLE session_events (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        session_id TEXT NOT NULL,
        type TEXT NOT NULL,
        payload TEXT NOT NULL,
        created_at INTEGER NOT NULL
      );
      CREATE INDEX session_events_session ON session_events(session_id, id);
    `,
  },
];
