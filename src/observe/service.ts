/**
 * `app.observe`: the stateful parts of the observability and context readouts — the prompt stack
 * ledger (every system-prompt assembly, recorded by `agent/prompt.ts`) and the cached codebase
 * summary behind `describe_context`. The read models themselves are functions over the narrow
 * dependencies they read (session-scope.ts, workspace-snapshot.ts).
 * @module
 */

import type { Config } from '../config/schema';
import type { Clock, Ids } from '../util/ids';
import { type CodebaseContextService, createCodebaseContext } from './codebase-context';
import type { WorkspaceFiles } from './codebase-summary';
import { createPromptStackLedger, type PromptStackLedger } from './prompt-stack';
import type { ReadModelQueries } from './read-model-queries';
import type { ObserveStores } from './stores';

export interface ObserveService {
  readonly promptStack: PromptStackLedger;
  readonly codebase: CodebaseContextService;
  /**
   * The read models' reads of the event log, messages, usage, hook runs and the coordination
   * trace, on the App's store (./read-model-queries.ts).
   */
  readonly queries: ReadModelQueries;
  /**
   * The system-prompt section of the cached codebase summary (one indexed read, never a
   * workspace walk), or undefined when there is none.
   */
  promptSection(): Promise<{ source: string; text: string } | undefined>;
}

export interface ObserveDeps {
  /** The observe tables (SQLite: createSqliteObserveStores, PostgreSQL: createPostgresObserveStores). */
  stores: ObserveStores;
  clock: Clock;
  ids: Ids;
  config: () => Config;
  workspace: string;
  /** The workspace's file walker (read when a summary is computed). */
  ws: () => WorkspaceFiles;
}

export function createObserveService(deps: ObserveDeps): ObserveService {
  const codebase = createCodebaseContext({ ...deps, codebaseCache: deps.stores.codebaseCache });
  return {
    promptStack: createPromptStackLedger({
      store: deps.stores.promptStacks,
      clock: deps.clock,
      ids: deps.ids,
    }),
    codebase,
    queries: deps.stores.queries,
    promptSection: async () => await codebase.promptSection(),
  };
}
