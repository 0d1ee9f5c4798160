/**
 * The reads of other domains' tables that the read models make (the journal, the cue ledger,
 * session observability, the health readouts, usage statistics, the multiplayer export), each an
 * async repository of its owning domain with a PostgreSQL twin (issue 18): the App builds them on
 * its store and hands them to the observe service, so no read model needs the SQLite handle.
 * @module
 */

import { createPostgresTraceQueries } from '../coordination/pg-trace-queries';
import { createTraceQueries, type TraceQueries } from '../coordination/trace-queries';
import { createEventLogQueries, type EventLogQueries } from '../events/log-queries';
import { createPostgresEventLogQueries } from '../events/pg-log-queries';
import { createHookRunQueries, type HookRunQueries } from '../packs/hook-run-queries';
import { createPostgresHookRunQueries } from '../packs/pg-hook-run-queries';
import { createMessageQueries, type MessageQueries } from '../sessions/message-queries';
import { createPostgresMessageQueries } from '../sessions/pg-message-queries';
import { createPostgresUsageQueries } from '../sessions/pg-usage-queries';
import { createUsageQueries, type UsageQueries } from '../sessions/usage-queries';
import type { Db } from '../store/db';
import type { SqlClient } from '../store/postgres/client';

export interface ReadModelQueries {
  /** `session_events`: what the bus logged. */
  readonly events: EventLogQueries;
  /** `messages`: a session's prompts and answers. */
  readonly messages: MessageQueries;
  /** `sessions` and `messages`: usage statistics. */
  readonly usage: UsageQueries;
  /** `pack_hook_runs`: the failed hook runs. */
  readonly hookRuns: HookRunQueries;
  /** `workspace_claims`, `claim_negotiations`, `workspace_markers`: the coordination trace. */
  readonly trace: TraceQueries;
}

export function createSqliteReadModelQueries(db: () => Db): ReadModelQueries {
  return {
    events: createEventLogQueries(db),
    messages: createMessageQueries(db),
    usage: createUsageQueries(db),
    hookRuns: createHookRunQueries(db),
    trace: createTraceQueries(db),
  };
}

export function createPostgresReadModelQueries(deps: { sql: SqlClient }): ReadModelQueries {
  return {
    events: createPostgresEventLogQueries(deps),
    messages: createPostgresMessageQueries(deps),
    usage: createPostgresUsageQueries(deps),
    hookRuns: createPostgresHookRunQueries(deps),
    trace: createPostgresTraceQueries(deps),
  };
}
