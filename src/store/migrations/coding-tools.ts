import type { Migration } from './types';

/** Coding tools (ids 250–299): per-session file history, read tracking, todos. */
export const codingToolsMigrations: Migration[] = [
  {
    id: 250,
    name: 'file history and read tracking',
    sql: `
      CREATE TABLE file_history (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        session_id TEXT,
        run_id TEXT,
        tool TEXT NOT NULL,
        path TEXT NOT NULL,
        change TEXT NOT NULL CHECK (change IN ('create', 'modify', 'delete')),
        before_text TEXT,
        after_text TEXT,
        before_sha TEXT,
        after_sha TEXT,
        before_size INTEGER,
        after_size INTEGER,
        binary INTEGER NOT NULL DEFAULT 0,
        created_at INTEGER NOT NULL
      );
      CREATE INDEX file_history_session ON file_history(session_id, id);
      CREATE INDEX file_history_path ON file_history(path, id);

      CREATE TABLE file_reads (
        session_id TEXT NOT NULL,
        path TEXT NOT NULL,
        sha256 TEXT NOT NULL,
        size INTEGER NOT NULL,
        mtime_ms REAL NOT NULL,
        read_at INTEGER NOT NULL,
        PRIMARY KEY (session_id, path)
      );
    `,
  },
  {
    id: 251,
    name: 'session todos',
    sql: `
      CREATE TABLE session_todos (
        session_id TEXT NOT NULL,
        position INTEGER NOT NULL,
        content TEXT NOT NULL,
        status TEXT NOT NULL CHECK (status IN ('pending', 'in_progress', 'completed', 'cancelled')),
        active_form TEXT,
        updated_at INTEGER NOT NULL,
        PRIMARY KEY (session_id, position)
      );
    `,
  },
];
