/**
 * The run ledger's reads (`agent_runs`, `agent_run_events`) on PostgreSQL (issue 18): the
 * `RunQueries` of ./queries.ts with the same answers as SQLite's, pinned by
 * test/store/contract/run-queries.contract.ts. Where the dialects differ:
 * - SQLite's rowid tie-break is `row_seq` (PostgreSQL migration 4), text orderings use the "C"
 *   collation (SQLite's BINARY), NULLs sort first ascending as in SQLite;
 * - JSON columns stay TEXT and are read with `::jsonb` operators: `payloadEquals` matches a JSON
 *   string equal to a string value, or a number (a boolean counts as 1 or 0) equal to a number
 *   value, as `json_extract(…) = ?` does; `payloadContains` and `reasonPrefix` are ILIKE, as
 *   SQLite's ASCII case-insensitive LIKE.
 * @module
 */
import type { SqlClient } from '../store/postgres/client';
import {
  type EventRow,
  payloadField,
  type RunEventReads,
  type RunLookups,
  type RunQueries,
  type RunReadModels,
  type RunRow,
  type RunUsageStats,
  type StatusCount,
  toEvent,
  toRun,
} from './queries';
import type { AgentRun, RunFilter } from './types';

/** A run row as PostgreSQL returns it: the columns SQLite has, and the ordering `row_seq`. */
export type PgRunRow = RunRow & { row_seq?: number };

/** A run from its PostgreSQL row (also for the writes' `RETURNING *`). */
export const fromPg = (row: PgRunRow): AgentRun => {
  const { row_seq: _order, ...rest } = row;
  return toRun(rest);
};

/** Collects `$n` parameters while a statement's clauses are written. */
function params() {
  const values: unknown[] = [];
  return {
    values,
    /** The placeholder of a new parameter. */
    add(value: unknown): string {
      values.push(value);
      return `$${values.length}`;
    },
  };
}

export function createPostgresRunQueries(deps: { sql: SqlClient }): RunQueries {
  const { sql } = deps;
  const runs = async (text: string, values: readonly unknown[] = []) =>
    (await sql.query<PgRunRow>(text, values)).map(fromPg);
  const run = async (text: string, values: readonly unknown[]) => {
    const row = await sql.one<PgRunRow>(text, values);
    return row ? fromPg(row) : undefined;
  };
  return {
    ...lookups(sql, runs, run),
    ...readModels(sql, runs),
    ...eventReads(sql),
  };
}

type Runs = (text: string, values?: readonly unknown[]) => Promise<AgentRun[]>;
type One = (text: string, values: readonly unknown[]) => Promise<AgentRun | undefined>;

function lookups(sql: SqlClient, runs: Runs, run: One): RunLookups {
  const where = (filter: Omit<RunFilter, 'limit' | 'offset'>, p: ReturnType<typeof params>) => {
    const clauses: string[] = [];
    // spec, Runs: family_session_id wins over session_id when both are set.
    if (filter.family_session_id) clauses.push(`family_session_id = ${p.add(filter.family_session_id)}`);
    else if (filter.session_id) clauses.push(`session_id = ${p.add(filter.session_id)}`);
    if (filter.parent_run_id) clauses.push(`parent_run_id = ${p.add(filter.parent_run_id)}`);
    if (filter.status?.length) clauses.push(`status = ANY(${p.add([...filter.status])}::text[])`);
    return clauses.length ? `WHERE ${clauses.join(' AND ')}` : '';
  };
  return {
    get: (id) => run('SELECT * FROM agent_runs WHERE id = $1', [id]),
    list(filter = {}) {
      const p = params();
      const clause = where(filter, p);
      return runs(
        `SELECT * FROM agent_runs ${clause} ORDER BY created_at DESC, id COLLATE "C" DESC
           LIMIT ${p.add(filter.limit ?? 50)} OFFSET ${p.add(filter.offset ?? 0)}`,
        p.values,
      );
    },
    async count(filter = {}) {
      const p = params();
      const row = await sql.one<{ n: number }>(
        `SELECT count(*) AS n FROM agent_runs ${where(filter, p)}`,
        p.values,
      );
      return row?.n ?? 0;
    },
    queued: (sessionId) =>
      runs(
        "SELECT * FROM agent_runs WHERE session_id = $1 AND status = 'queued' ORDER BY created_at, row_seq",
        [sessionId],
      ),
    running: (sessionId) =>
      run("SELECT * FROM agent_runs WHERE session_id = $1 AND status = 'running' ORDER BY row_seq LIMIT 1", [
        sessionId,
      ]),
    runningAll: () => runs("SELECT * FROM agent_runs WHERE status = 'running' ORDER BY row_seq"),
    runningOthers: (sessionId, exceptRunId) =>
      runs(
        "SELECT * FROM agent_runs WHERE session_id = $1 AND status = 'running' AND id <> $2 ORDER BY row_seq",
        [sessionId, exceptRunId],
      ),
    async sessionOf(runId) {
      return (
        await sql.one<{ session_id: string }>('SELECT session_id FROM agent_runs WHERE id = $1', [runId])
      )?.session_id;
    },
    async cancelRequested(id) {
      const row = await sql.one<{ cancel_requested: number }>(
        'SELECT cancel_requested FROM agent_runs WHERE id = $1',
        [id],
      );
      return row?.cancel_requested === 1;
    },
    async subtree(id) {
      const rows = await sql.query<{ id: string }>(
        `WITH RECURSIVE tree(id) AS (SELECT id FROM agent_runs WHERE id = $1
             UNION ALL SELECT r.id FROM agent_runs r JOIN tree ON r.parent_run_id = tree.id)
           SELECT id FROM tree`,
        [id],
      );
      return rows.map((r) => r.id);
    },
  };
}

function readModels(sql: SqlClient, runs: Runs): RunReadModels {
  const counts = (text: string, values: readonly unknown[] = []) => sql.query<StatusCount>(text, values);
  return {
    ofSession: (sessionId) =>
      runs('SELECT * FROM agent_runs WHERE session_id = $1 ORDER BY created_at DESC, row_seq DESC', [
        sessionId,
      ]),
    ofFamily(familySessionId, options) {
      if (options.order === 'asc') {
        return runs('SELECT * FROM agent_runs WHERE family_session_id = $1 ORDER BY created_at, row_seq', [
          familySessionId,
        ]);
      }
      const limit = options.limit === undefined ? '' : ' LIMIT $2';
      return runs(
        `SELECT * FROM agent_runs WHERE family_session_id = $1 ORDER BY created_at DESC, row_seq DESC${limit}`,
        options.limit === undefined ? [familySessionId] : [familySessionId, options.limit],
      );
    },
    inWindow(filter) {
      const p = params();
      const clauses = [`coalesce(finished_at, started_at, created_at) >= ${p.add(filter.since)}`];
      if (filter.statuses) clauses.push(`status = ANY(${p.add([...filter.statuses])}::text[])`);
      if (filter.sessionIds) clauses.push(`session_id = ANY(${p.add([...filter.sessionIds])}::text[])`);
      if (filter.yolo) clauses.push(`(options::jsonb -> 'yolo') IN ('true'::jsonb, '1'::jsonb)`);
      if (filter.reasonPrefix !== undefined) {
        const prefix = `${filter.reasonPrefix.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
        clauses.push(`reason ILIKE ${p.add(prefix)} ESCAPE '\\'`);
      }
      return runs(
        `SELECT * FROM agent_runs WHERE ${clauses.join(' AND ')}
          ORDER BY coalesce(finished_at, started_at, created_at) DESC, row_seq DESC LIMIT ${p.add(filter.limit ?? 10_000)}`,
        p.values,
      );
    },
    childRuns(options) {
      const p = params();
      const scope = options.familySessionId
        ? `AND family_session_id = ${p.add(options.familySessionId)}`
        : '';
      if (options.state === 'running') {
        return runs(
          `SELECT * FROM agent_runs WHERE parent_run_id IS NOT NULL AND status = 'running' ${scope}
             ORDER BY created_at, id COLLATE "C"`,
          p.values,
        );
      }
      return runs(
        `SELECT * FROM agent_runs WHERE parent_run_id IS NOT NULL AND status NOT IN ('queued', 'running') ${scope}
           ORDER BY created_at DESC, id COLLATE "C" DESC LIMIT ${p.add(options.limit ?? 10_000)}`,
        p.values,
      );
    },
    childStatusCounts: (familySessionId) =>
      familySessionId
        ? counts(
            `SELECT status, count(*) AS n FROM agent_runs WHERE parent_run_id IS NOT NULL AND family_session_id = $1
               GROUP BY status ORDER BY status COLLATE "C"`,
            [familySessionId],
          )
        : counts(
            `SELECT status, count(*) AS n FROM agent_runs WHERE parent_run_id IS NOT NULL
               GROUP BY status ORDER BY status COLLATE "C"`,
          ),
    async statusCountsOf(sessionIds) {
      if (!sessionIds.length) return [];
      return counts(
        `SELECT status, count(*) AS n FROM agent_runs WHERE session_id = ANY($1::text[])
           GROUP BY status ORDER BY status COLLATE "C"`,
        [[...sessionIds]],
      );
    },
    usageStats: (options) => usageStats(sql, options.since),
  };
}

async function usageStats(sql: SqlClient, since: number): Promise<RunUsageStats> {
  const [by_status, by_origin, totals, tools, days] = await Promise.all([
    sql.query<StatusCount>(
      'SELECT status, count(*) AS n FROM agent_runs GROUP BY status ORDER BY status COLLATE "C"',
    ),
    sql.query<{ origin: string; n: number }>(
      'SELECT origin, count(*) AS n FROM agent_runs GROUP BY origin ORDER BY origin COLLATE "C"',
    ),
    sql.one<RunUsageStats['totals']>(
      "SELECT count(*) AS total, coalesce(avg(steps), 0)::float8 AS steps FROM agent_runs WHERE status <> 'queued'",
    ),
    sql.query<{ tool: string; calls: number; errors: number }>(
      `SELECT tool, count(*) AS calls, coalesce(sum(error), 0)::float8 AS errors
         FROM (SELECT payload::jsonb ->> 'tool' AS tool,
                      CASE jsonb_typeof(payload::jsonb -> 'is_error')
                        WHEN 'boolean' THEN (payload::jsonb -> 'is_error')::text::boolean::int
                        WHEN 'number' THEN (payload::jsonb ->> 'is_error')::float8
                      END AS error
                 FROM agent_run_events WHERE type = 'tool.finished') AS finished
        GROUP BY tool ORDER BY calls DESC, tool COLLATE "C" NULLS FIRST LIMIT 25`,
    ),
    sql.query<{ date: string; runs: number; cost: number }>(
      `SELECT to_char(to_timestamp(created_at / 1000) AT TIME ZONE 'UTC', 'YYYY-MM-DD') AS date,
              count(*) AS runs, coalesce(sum(cost), 0)::float8 AS cost
         FROM agent_runs WHERE created_at >= $1 GROUP BY 1 ORDER BY 1`,
      [since],
    ),
  ]);
  return { by_status, by_origin, totals: totals ?? { total: 0, steps: 0 }, tools, days };
}

function eventReads(sql: SqlClient): RunEventReads {
  const events = async (text: string, values: readonly unknown[]) =>
    (await sql.query<EventRow>(text, values)).map(toEvent);
  return {
    events(runId, options = {}) {
      const types = options.types?.length ? options.types : undefined;
      return events(
        `SELECT * FROM agent_run_events WHERE run_id = $1 AND seq > $2
           ${types ? 'AND type = ANY($4::text[])' : ''} ORDER BY seq LIMIT $3`,
        [runId, options.afterSeq ?? 0, options.limit ?? 1000, ...(types ? [types] : [])],
      );
    },
    async eventCount(runId) {
      const row = runId
        ? await sql.one<{ n: number }>('SELECT count(*) AS n FROM agent_run_events WHERE run_id = $1', [
            runId,
          ])
        : await sql.one<{ n: number }>('SELECT count(*) AS n FROM agent_run_events');
      return row?.n ?? 0;
    },
    recentEvents(options = {}) {
      const p = params();
      const clauses: string[] = [];
      if (options.sessionId) clauses.push(`session_id = ${p.add(options.sessionId)}`);
      if (options.type) clauses.push(`type = ${p.add(options.type)}`);
      return events(
        `SELECT * FROM agent_run_events ${clauses.length ? `WHERE ${clauses.join(' AND ')}` : ''}
           ORDER BY id DESC LIMIT ${p.add(options.limit ?? 50)}`,
        p.values,
      );
    },
    async findEvents(filter) {
      const p = params();
      const clauses: string[] = [];
      const list = (column: string, values: readonly string[] | undefined) => {
        if (values) clauses.push(`${column} = ANY(${p.add([...values])}::text[])`);
      };
      const equal = (column: string, value: string | undefined) => {
        if (value !== undefined) clauses.push(`${column} = ${p.add(value)}`);
      };
      list('type', filter.types);
      if (filter.since !== undefined) clauses.push(`created_at >= ${p.add(filter.since)}`);
      equal('session_id', filter.sessionId);
      list('session_id', filter.sessionIds);
      equal('run_id', filter.runId);
      list('run_id', filter.runIds);
      for (const [field, value] of Object.entries(filter.payloadEquals ?? {})) {
        const json = `(payload::jsonb -> '${payloadField(field)}')`;
        clauses.push(
          typeof value === 'number'
            ? `(CASE jsonb_typeof(${json}) WHEN 'number' THEN (${json} #>> '{}')::numeric = ${p.add(value)}::numeric
                 WHEN 'boolean' THEN ${json}::text::boolean::int = ${p.add(value)}::numeric ELSE false END)`
            : `${json} = to_jsonb(${p.add(value)}::text)`,
        );
      }
      for (const [field, value] of Object.entries(filter.payloadContains ?? {})) {
        clauses.push(`(payload::jsonb ->> '${payloadField(field)}') ILIKE ${p.add(`%${value}%`)}`);
      }
      const limit = filter.limit === undefined ? '' : ` LIMIT ${p.add(filter.limit)}`;
      return events(
        `SELECT * FROM agent_run_events ${clauses.length ? `WHERE ${clauses.join(' AND ')}` : ''}
          ORDER BY id ${filter.order === 'desc' ? 'DESC' : 'ASC'}${limit}`,
        p.values,
      );
    },
  };
}
