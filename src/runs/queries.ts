/**
 * Every read of the run ledger (`agent_runs`, `agent_run_events`): the ledger's own lookups and
 * the reads other domains and readouts build on (session observability, cue ledger, composition
 * graph, task aggregate, health evidence, spawn status, usage statistics). This file is the one
 * place that knows how runs are stored: a second storage backend implements `RunQueries`.
 *
 * Reads never write: the ledger's first-use recovery of orphaned runs stays in the ledger.
 * @module
 */
import type { Statement } from 'better-sqlite3';
import type { Db } from '../store/db';
import { statementCache } from '../store/statement-cache';
import { flushHeld } from '../store/transaction-memo';
import { getWideRow } from '../store/wide-row';
import { flushHeldTotals } from './held-run-totals';
import { type EventRow, type RunRow, toEvent, toRun } from './run-rows';
import type { AgentRun, RunEvent, RunFilter } from './types';

/** Which run events to read. Lists that are given but empty match nothing. */
export interface RunEventFilter {
  types?: readonly string[];
  runId?: string;
  runIds?: readonly string[];
  sessionId?: string;
  sessionIds?: readonly string[];
  /** Only events created at or after this time (ms). */
  since?: number;
  /** Payload fields that must equal these values. */
  payloadEquals?: Readonly<Record<string, string | number>>;
  /** Payload fields that must contain these substrings. */
  payloadContains?: Readonly<Record<string, string>>;
  /** By event id: `asc` (the order they happened, default) or `desc` (newest first). */
  order?: 'asc' | 'desc';
  limit?: number;
}

/** Runs that ended (or started, or were created) at or after `since`, newest first. */
export interface RunWindowFilter {
  since: number;
  statuses?: readonly string[];
  sessionIds?: readonly string[];
  /** Only runs started with `--yolo`. */
  yolo?: boolean;
  /** Only runs whose end reason starts with this text (case-insensitive, as SQL LIKE). */
  reasonPrefix?: string;
  limit?: number;
}

export interface StatusCount {
  status: string;
  n: number;
}

/** `svc stats`: what the runs of this data directory did. */
export interface RunUsageStats {
  by_status: StatusCount[];
  by_origin: { origin: string; n: number }[];
  /** Runs past the queue and their average step count. */
  totals: { total: number; steps: number };
  /** The 25 most called tools. */
  tools: { tool: string; calls: number; errors: number }[];
  /** Runs and cost per UTC day since the given time. */
  days: { date: string; runs: number; cost: number }[];
}

/** The ledger's own lookups (by id, by session, the queue). */
export interface RunLookups {
  get(id: string): Promise<AgentRun | undefined>;
  /** Newest first (`created_at DESC, id DESC`), paged. */
  list(filter?: RunFilter): Promise<AgentRun[]>;
  count(filter?: Omit<RunFilter, 'limit' | 'offset'>): Promise<number>;
  /** A session's queued runs, oldest first (its prompt queue). */
  queued(sessionId: string): Promise<AgentRun[]>;
  /** The running run of a session, if any. */
  running(sessionId: string): Promise<AgentRun | undefined>;
  /** Every running run (any process), for recovery. */
  runningAll(): Promise<AgentRun[]>;
  /** The session's other running runs. */
  runningOthers(sessionId: string, exceptRunId: string): Promise<AgentRun[]>;
  sessionOf(runId: string): Promise<string | undefined>;
  cancelRequested(id: string): Promise<boolean>;
  /** The run and every run below it (sub-agent runs), ids only. */
  subtree(id: string): Promise<string[]>;
}

/** The runs the read models look at: a session's, a family's, a time window's, sub-agents'. */
export interface RunReadModels {
  /** Every run of a session, newest first. */
  ofSession(sessionId: string): Promise<AgentRun[]>;
  /** Every run of a session family: oldest first, or the newest `limit` newest first. */
  ofFamily(familySessionId: string, options: { order: 'asc' | 'desc'; limit?: number }): Promise<AgentRun[]>;
  inWindow(filter: RunWindowFilter): Promise<AgentRun[]>;
  /** Sub-agent runs, running (oldest first) or ended (newest first), in a family or everywhere. */
  childRuns(options: {
    state: 'running' | 'ended';
    familySessionId?: string;
    limit?: number;
  }): Promise<AgentRun[]>;
  /** Sub-agent runs per status, in a family or everywhere. */
  childStatusCounts(familySessionId?: string): Promise<StatusCount[]>;
  /** Runs per status of these sessions. */
  statusCountsOf(sessionIds: readonly string[]): Promise<StatusCount[]>;
  usageStats(options: { since: number }): Promise<RunUsageStats>;
}

/** The runs' events. */
export interface RunEventReads {
  /** A run's events in sequence order. */
  events(
    runId: string,
    options?: { afterSeq?: number; limit?: number; types?: string[] },
  ): Promise<RunEvent[]>;
  eventCount(runId?: string): Promise<number>;
  /** Newest first. */
  recentEvents(options?: { limit?: number; sessionId?: string; type?: string }): Promise<RunEvent[]>;
  findEvents(filter: RunEventFilter): Promise<RunEvent[]>;
}

export interface RunQueries extends RunLookups, RunReadModels, RunEventReads {}

/** `T` with each promise-returning method answering at once: the SQLite reads as they run inside. */
export type SyncOf<T> = {
  [K in keyof T]: T[K] extends (...a: infer A) => Promise<infer R> ? (...a: A) => R : T[K];
};

/**
 * The SQLite reads, synchronous: the ledger's own SQLite transactions (claim, recovery) run them
 * inside one better-sqlite3 transaction.
 */
export type SqliteRunQueries = SyncOf<RunQueries>;

const PAYLOAD_FIELD = /^[A-Za-z_][A-Za-z0-9_]*$/;

export { type EventRow, type RunRow, toEvent, toRun } from './run-rows';

/** `?, ?, ?` for an IN list; `NULL` for an empty one (which matches nothing). */
const marks = (values: readonly unknown[]) => values.map(() => '?').join(', ') || 'NULL';

/** Statements: `cached` for the fixed few every run uses, `once` for the read models' own. */
interface Sql {
  cached(text: string): Statement;
  once(text: string): Statement;
}

const runs = (statement: Statement, ...params: unknown[]) =>
  (statement.all(...params) as RunRow[]).map(toRun);

/** The reads over a database handle (opened on first use), async: each statement runs when called. */
export function createRunQueries(db: () => Db): RunQueries {
  return asyncRunQueries(createSqliteRunQueries(db));
}

/** The SQLite reads as they are, synchronous (the ledger's own transactions use them). */
export function createSqliteRunQueries(db: () => Db): SqliteRunQueries {
  // Every read of the run ledger: the run totals the handle's transaction holds (a last step end's,
  // ./held-run-totals.ts) written first.
  const cachedStatement = statementCache(db);
  const sql: Sql = {
    cached(text) {
      flushHeldTotals(db());
      return cachedStatement(text);
    },
    once(text) {
      const handle = db();
      flushHeldTotals(handle);
      return handle.prepare(text);
    },
  };
  // The reads of `agent_run_events`: the events the handle's transaction holds for one INSERT
  // (./run-events.ts, ../store/held-rows.ts) written first.
  const events: Sql = {
    cached(text) {
      flushHeld(db());
      return sql.cached(text);
    },
    once(text) {
      flushHeld(db());
      return sql.once(text);
    },
  };
  return { ...runLookups(sql), ...runReadModels(sql, events), ...runEventReads(events) };
}

/** The synchronous reads behind the async interface; each runs its statement when it is called. */
export function asyncRunQueries(q: SqliteRunQueries): RunQueries {
  return {
    get: async (id) => q.get(id),
    list: async (filter) => q.list(filter),
    count: async (filter) => q.count(filter),
    queued: async (sessionId) => q.queued(sessionId),
    running: async (sessionId) => q.running(sessionId),
    runningAll: async () => q.runningAll(),
    runningOthers: async (sessionId, exceptRunId) => q.runningOthers(sessionId, exceptRunId),
    sessionOf: async (runId) => q.sessionOf(runId),
    cancelRequested: async (id) => q.cancelRequested(id),
    subtree: async (id) => q.subtree(id),
    ofSession: async (sessionId) => q.ofSession(sessionId),
    ofFamily: async (familySessionId, options) => q.ofFamily(familySessionId, options),
    inWindow: async (filter) => q.inWindow(filter),
    childRuns: async (options) => q.childRuns(options),
    childStatusCounts: async (familySessionId) => q.childStatusCounts(familySessionId),
    statusCountsOf: async (sessionIds) => q.statusCountsOf(sessionIds),
    usageStats: async (options) => q.usageStats(options),
    events: async (runId, options) => q.events(runId, options),
    eventCount: async (runId) => q.eventCount(runId),
    recentEvents: async (options) => q.recentEvents(options),
    findEvents: async (filter) => q.findEvents(filter),
  };
}

function runLookups({ cached }: Sql): SyncOf<RunLookups> {
  const where = (filter: Omit<RunFilter, 'limit' | 'offset'>) => {
    const clauses: string[] = [];
    const params: unknown[] = [];
    // spec, Runs: family_session_id wins over session_id when both are set.
    if (filter.family_session_id) {
      clauses.push('family_session_id = ?');
      params.push(filter.family_session_id);
    } else if (filter.session_id) {
      clauses.push('session_id = ?');
      params.push(filter.session_id);
    }
    if (filter.parent_run_id) {
      clauses.push('parent_run_id = ?');
      params.push(filter.parent_run_id);
    }
    if (filter.status?.length) {
      clauses.push(`status IN (${filter.status.map(() => '?').join(', ')})`);
      params.push(...filter.status);
    }
    return { sql: clauses.length ? `WHERE ${clauses.join(' AND ')}` : '', params };
  };

  return {
    get(id) {
      const row = getWideRow<RunRow>(cached('SELECT * FROM agent_runs WHERE id = ?'), [id]);
      return row ? toRun(row) : undefined;
    },
    list(filter = {}) {
      const { sql, params } = where(filter);
      return runs(
        cached(`SELECT * FROM agent_runs ${sql} ORDER BY created_at DESC, id DESC LIMIT ? OFFSET ?`),
        ...params,
        filter.limit ?? 50,
        filter.offset ?? 0,
      );
    },
    count(filter = {}) {
      const { sql, params } = where(filter);
      return (cached(`SELECT count(*) AS n FROM agent_runs ${sql}`).get(...params) as { n: number }).n;
    },
    queued(sessionId) {
      return runs(
        cached(
          "SELECT * FROM agent_runs WHERE session_id = ? AND status = 'queued' ORDER BY created_at, rowid",
        ),
        sessionId,
      );
    },
    running(sessionId) {
      const row = getWideRow<RunRow>(
        cached("SELECT * FROM agent_runs WHERE session_id = ? AND status = 'running' LIMIT 1"),
        [sessionId],
      );
      return row ? toRun(row) : undefined;
    },
    runningAll() {
      return runs(cached("SELECT * FROM agent_runs WHERE status = 'running'"));
    },
    runningOthers(sessionId, exceptRunId) {
      return runs(
        cached("SELECT * FROM agent_runs WHERE session_id = ? AND status = 'running' AND id != ?"),
        sessionId,
        exceptRunId,
      );
    },
    sessionOf(runId) {
      const row = cached('SELECT session_id FROM agent_runs WHERE id = ?').get(runId) as
        | { session_id: string }
        | undefined;
      return row?.session_id;
    },
    cancelRequested(id) {
      const row = cached('SELECT cancel_requested FROM agent_runs WHERE id = ?').get(id) as
        | { cancel_requested: number }
        | undefined;
      return row?.cancel_requested === 1;
    },
    subtree(id) {
      return (
        cached(
          `WITH RECURSIVE tree(id) AS (SELECT id FROM agent_runs WHERE id = ?
               UNION ALL SELECT r.id FROM agent_runs r JOIN tree ON r.parent_run_id = tree.id)
             SELECT id FROM tree`,
        ).all(id) as { id: string }[]
      ).map((r) => r.id);
    },
  };
}

function runReadModels({ once }: Sql, events: Sql): SyncOf<RunReadModels> {
  return {
    ofSession(sessionId) {
      return runs(
        once('SELECT * FROM agent_runs WHERE session_id = ? ORDER BY created_at DESC, rowid DESC'),
        sessionId,
      );
    },
    ofFamily(familySessionId, options) {
      if (options.order === 'asc') {
        return runs(
          once('SELECT * FROM agent_runs WHERE family_session_id = ? ORDER BY created_at, rowid'),
          familySessionId,
        );
      }
      return options.limit === undefined
        ? runs(
            once('SELECT * FROM agent_runs WHERE family_session_id = ? ORDER BY created_at DESC, rowid DESC'),
            familySessionId,
          )
        : runs(
            once(
              'SELECT * FROM agent_runs WHERE family_session_id = ? ORDER BY created_at DESC, rowid DESC LIMIT ?',
            ),
            familySessionId,
            options.limit,
          );
    },
    inWindow(filter) {
      const clauses = ['coalesce(finished_at, started_at, created_at) >= ?'];
      const params: unknown[] = [filter.since];
      if (filter.statuses) {
        clauses.push(`status IN (${marks(filter.statuses)})`);
        params.push(...filter.statuses);
      }
      if (filter.sessionIds) {
        clauses.push(`session_id IN (${marks(filter.sessionIds)})`);
        params.push(...filter.sessionIds);
      }
      if (filter.yolo) clauses.push("json_extract(options, '$.yolo') = 1");
      if (filter.reasonPrefix !== undefined) {
        clauses.push("reason LIKE ? ESCAPE '\\'");
        params.push(`${filter.reasonPrefix.replace(/[\\%_]/g, (c) => `\\${c}`)}%`);
      }
      return runs(
        once(
          `SELECT * FROM agent_runs WHERE ${clauses.join(' AND ')}
            ORDER BY coalesce(finished_at, started_at, created_at) DESC, rowid DESC LIMIT ?`,
        ),
        ...params,
        filter.limit ?? 10_000,
      );
    },
    childRuns(options) {
      const scope = options.familySessionId ? 'AND family_session_id = ?' : '';
      const params = options.familySessionId ? [options.familySessionId] : [];
      if (options.state === 'running') {
        return runs(
          once(
            `SELECT * FROM agent_runs WHERE parent_run_id IS NOT NULL AND status = 'running' ${scope} ORDER BY created_at, id`,
          ),
          ...params,
        );
      }
      return runs(
        once(
          `SELECT * FROM agent_runs WHERE parent_run_id IS NOT NULL AND status NOT IN ('queued', 'running') ${scope}
             ORDER BY created_at DESC, id DESC LIMIT ?`,
        ),
        ...params,
        options.limit ?? 10_000,
      );
    },
    childStatusCounts(familySessionId) {
      const scope = familySessionId ? 'AND family_session_id = ?' : '';
      return once(
        `SELECT status, count(*) AS n FROM agent_runs WHERE parent_run_id IS NOT NULL ${scope} GROUP BY status`,
      ).all(...(familySessionId ? [familySessionId] : [])) as StatusCount[];
    },
    statusCountsOf(sessionIds) {
      if (!sessionIds.length) return [];
      return once(
        `SELECT status, count(*) AS n FROM agent_runs WHERE session_id IN (${marks(sessionIds)}) GROUP BY status`,
      ).all(...sessionIds) as StatusCount[];
    },
    usageStats(options) {
      const all = <T>(text: string, ...params: unknown[]) => once(text).all(...params) as T[];
      return {
        by_status: all('SELECT status, count(*) AS n FROM agent_runs GROUP BY status ORDER BY status'),
        by_origin: all('SELECT origin, count(*) AS n FROM agent_runs GROUP BY origin ORDER BY origin'),
        totals: once(
          "SELECT count(*) AS total, coalesce(avg(steps), 0) AS steps FROM agent_runs WHERE status NOT IN ('queued')",
        ).get() as RunUsageStats['totals'],
        tools: events
          .once(
            `SELECT json_extract(payload, '$.tool') AS tool, count(*) AS calls,
                  coalesce(sum(json_extract(payload, '$.is_error')), 0) AS errors
           FROM agent_run_events WHERE type = 'tool.finished' GROUP BY tool ORDER BY calls DESC, tool LIMIT 25`,
          )
          .all() as RunUsageStats['tools'],
        days: all(
          `SELECT date(created_at / 1000, 'unixepoch') AS date, count(*) AS runs, coalesce(sum(cost), 0) AS cost
           FROM agent_runs WHERE created_at >= ? GROUP BY date ORDER BY date`,
          options.since,
        ),
      };
    },
  };
}

function runEventReads({ cached, once }: Sql): SyncOf<RunEventReads> {
  return {
    events(runId, options = {}) {
      const types = options.types?.length ? options.types : undefined;
      const rows = cached(
        `SELECT * FROM agent_run_events WHERE run_id = ? AND seq > ?
           ${types ? `AND type IN (${types.map(() => '?').join(', ')})` : ''} ORDER BY seq LIMIT ?`,
      ).all(runId, options.afterSeq ?? 0, ...(types ?? []), options.limit ?? 1000) as EventRow[];
      return rows.map(toEvent);
    },
    eventCount(runId) {
      const row = runId
        ? cached('SELECT count(*) AS n FROM agent_run_events WHERE run_id = ?').get(runId)
        : cached('SELECT count(*) AS n FROM agent_run_events').get();
      return (row as { n: number }).n;
    },
    recentEvents(options = {}) {
      const clauses: string[] = [];
      const params: unknown[] = [];
      if (options.sessionId) {
        clauses.push('session_id = ?');
        params.push(options.sessionId);
      }
      if (options.type) {
        clauses.push('type = ?');
        params.push(options.type);
      }
      const rows = cached(
        `SELECT * FROM agent_run_events ${clauses.length ? `WHERE ${clauses.join(' AND ')}` : ''} ORDER BY id DESC LIMIT ?`,
      ).all(...params, options.limit ?? 50) as EventRow[];
      return rows.map(toEvent);
    },
    findEvents(filter) {
      const clauses: string[] = [];
      const params: unknown[] = [];
      const list = (column: string, values: readonly unknown[] | undefined) => {
        if (!values) return;
        clauses.push(`${column} IN (${marks(values)})`);
        params.push(...values);
      };
      const equal = (column: string, value: unknown) => {
        if (value === undefined) return;
        clauses.push(`${column} = ?`);
        params.push(value);
      };
      list('type', filter.types);
      if (filter.since !== undefined) {
        clauses.push('created_at >= ?');
        params.push(filter.since);
      }
      equal('session_id', filter.sessionId);
      list('session_id', filter.sessionIds);
      equal('run_id', filter.runId);
      list('run_id', filter.runIds);
      for (const [field, value] of Object.entries(filter.payloadEquals ?? {})) {
        equal(`json_extract(payload, '$.${payloadField(field)}')`, value);
      }
      for (const [field, value] of Object.entries(filter.payloadContains ?? {})) {
        clauses.push(`json_extract(payload, '$.${payloadField(field)}') LIKE ?`);
        params.push(`%${value}%`);
      }
      const rows = once(
        `SELECT * FROM agent_run_events ${clauses.length ? `WHERE ${clauses.join(' AND ')}` : ''}
          ORDER BY id ${filter.order === 'desc' ? 'DESC' : 'ASC'}${filter.limit === undefined ? '' : ' LIMIT ?'}`,
      ).all(...params, ...(filter.limit === undefined ? [] : [filter.limit])) as EventRow[];
      return rows.map(toEvent);
    },
  };
}

/** A payload field name goes into a JSON path: only plain identifiers. */
export function payloadField(name: string): string {
  if (!PAYLOAD_FIELD.test(name)) throw new Error(`run event payload field "${name}" is not an identifier`);
  return name;
}
