import type { Migration } from './types';

/**
 * Observability and context readouts (ids 520–539): every system-prompt assembly of the agent
 * (metadata only, never the text) and the cached codebase summary behind describe_context.
 */
export const observeMigrations: Migration[] = [
  {
    id: 520,
    name: 'prompt stack builds',
    sql: `
      CREATE TABLE prompt_stack_builds (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        build_id TEXT NOT NULL UNIQUE,
        session_id TEXT,
        run_id TEXT,
        agent TEXT NOT NULL,
        section_count INTEGER NOT NULL,
        total_chars INTEGER NOT NULL,
        token_estimate INTEGER NOT NULL,
        sha256_prefix TEXT NOT NULL,
        sections TEXT NOT NULL DEFAULT '[]',
        created_at INTEGER NOT NULL
      );
      CREATE INDEX prompt_stack_builds_session ON prompt_stack_builds(session_id, id);
    `,
  },
  {
    id: 521,
    name: 'codebase context cache',
    sql: `
      CREATE TABLE codebase_context_cache (
        workspace TEXT PRIMARY KEY,
        summary TEXT NOT NULL,
        computed_at INTEGER NOT NULL,
        compute_ms INTEGER NOT NULL DEFAULT 0,
        computations INTEGER NOT NULL DEFAULT 1
      );
    `,
  },
];
