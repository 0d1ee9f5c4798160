/**
 * The observe domain's tables, handed to `createObserveService` so the app picks the backend: the
 * SQLite stores (the default) and their PostgreSQL twins (issue 18).
 * @module
 */
import { SvcError } from '../errors';
import type { Db } from '../store/db';
import type { SqlClient } from '../store/postgres/client';
import { type CodebaseCacheStore, createCodebaseCacheStore } from './codebase-cache-store';
import { createPostgresCodebaseCacheStore } from './pg-codebase-cache-store';
import { createPostgresPromptStackStore } from './pg-prompt-stack-store';
import { createPromptStackStore, type PromptStackStore } from './prompt-stack-store';
import {
  createPostgresReadModelQueries,
  createSqliteReadModelQueries,
  type ReadModelQueries,
} from './read-model-queries';

export interface ObserveStores {
  /** `prompt_stack_builds`: the prompt stack ledger. */
  promptStacks: PromptStackStore;
  /** `codebase_context_cache`: the cached codebase summary. */
  codebaseCache: CodebaseCacheStore;
  /** The read models' reads of other domains' tables (./read-model-queries.ts). */
  queries: ReadModelQueries;
}

/** The observe stores on the SQLite database; the prompt stack ledger is `unavailable` when it cannot open. */
export function createSqliteObserveStores(db: () => Db): ObserveStores {
  const ledgerDb = (): Db => {
    try {
      return db();
    } catch (error) {
      throw new SvcError(
        'unavailable',
        `prompt stack ledger unavailable: ${SvcError.is(error) ? error.message : String(error)}`,
        { cause: error },
      );
    }
  };
  return {
    promptStacks: createPromptStackStore(ledgerDb),
    codebaseCache: createCodebaseCacheStore(db),
    queries: createSqliteReadModelQueries(db),
  };
}

/** The observe stores on PostgreSQL (issue 18). */
export function createPostgresObserveStores(deps: { sql: SqlClient }): ObserveStores {
  return {
    promptStacks: createPostgresPromptStackStore(deps),
    codebaseCache: createPostgresCodebaseCacheStore(deps),
    queries: createPostgresReadModelQueries(deps),
  };
}
