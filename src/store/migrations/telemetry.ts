import type { Migration } from './types';

/** Telemetry (ids 800–819): the cost ledger of every model call. */
export const telemetryMigrations: Migration[] = [
  {
    id: 800,
    name: 'model call ledger',
    sql: `
      CREATE TABLE model_calls (
        id TEXT PRIMARY KEY,
        at INTEGER NOT NULL,
        day TEXT NOT NULL,
        session_id TEXT,
        run_id TEXT,
        provider TEXT NOT NULL,
        model TEXT NOT NULL,
        purpose TEXT NOT NULL,
        input_tokens INTEGER NOT NULL DEFAULT 0,
        output_tokens INTEGER NOT NULL DEFAULT 0,
        reasoning_tokens INTEGER NOT NULL DEFAULT 0,
        cached_input_tokens INTEGER NOT NULL DEFAULT 0,
        cost REAL NOT NULL DEFAULT 0,
        ttft_ms INTEGER,
        duration_ms INTEGER NOT NULL,
        status TEXT NOT NULL CHECK (status IN ('ok', 'error'))
      );
      CREATE INDEX model_calls_session ON model_calls(session_id, at);
      CREATE INDEX model_calls_day ON model_calls(day);
    `,
  },
];
