/**
 * `findings`, `finding_events` on PostgreSQL (issue 18): the twin of ./finding-repository.ts, the
 * same answers: one finding per fingerprint (the unique constraint decides: a second insert is
 * ignored and answers false), active findings oldest first, lists most recently seen first, the
 * log newest first; ids compared bytewise as SQLite does. The stale sweep at a run's end is skipped
 * under SQLite's conditions (../quality/findings.ts), with the table's change generation
 * (../store/postgres/table-changes.ts) in place of data_version.
 * @module
 */
import type { SqlClient } from '../store/postgres/client';
import { tableChanges } from '../store/postgres/table-changes';
import {
  type ActiveScope,
  type FindingCount,
  type FindingRepository,
  type FindingRow,
  findingInsertValues,
  sightedValues,
} from './finding-repository';
import type { FindingEvent } from './finding-types';

type Row = FindingRow & Record<string, unknown>;

const COLUMNS = `id, kind, fingerprint, state, title, detail, severity, path, line, check_key, check_command,
  check_kind, session_id, run_id, last_session_id, last_run_id, occurrences, first_seen_at, last_seen_at,
  state_changed_at`;

const activeScope = (scope: ActiveScope): { where: string; params: unknown[] } => {
  switch (scope.with) {
    case 'check':
      return { where: 'check_key IS NOT NULL', params: [] };
    case 'diagnostics_of':
      return { where: "kind = 'diagnostic' AND path = $1", params: [scope.path] };
    case 'path':
      return { where: 'path = $1', params: [scope.path] };
    case 'touched_by':
      return {
        where:
          "state = 'open' AND (path = $1 OR (kind != 'diagnostic' AND path IS NULL AND last_session_id = $2))",
        params: [scope.path, scope.sessionId],
      };
    case 'seen_before':
      return { where: 'last_seen_at < $1', params: [scope.cutoff] };
  }
};

export function createPostgresFindingRepository(deps: { sql: SqlClient }): FindingRepository {
  const { sql } = deps;
  const changes = tableChanges(sql);
  const write = <T>(fn: () => Promise<T>) => changes.write('findings', fn);
  const byId = (id: string) => sql.one<Row>(`SELECT ${COLUMNS} FROM findings WHERE id = $1`, [id]);
  return {
    byFingerprint: (fingerprint) =>
      sql.one<Row>(`SELECT ${COLUMNS} FROM findings WHERE fingerprint = $1`, [fingerprint]),
    byId,
    async insert(id, observation, actor, now) {
      const inserted = await write(() =>
        sql.run(
          `INSERT INTO findings (id, kind, fingerprint, state, title, detail, severity, path, line, check_key,
           check_command, check_kind, session_id, run_id, last_session_id, last_run_id, occurrences,
           first_seen_at, last_seen_at, state_changed_at)
         VALUES ($1, $2, $3, 'open', $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, 1, $16, $17, $18)
         ON CONFLICT (fingerprint) DO NOTHING`,
          findingInsertValues(id, observation, actor, now),
        ),
      );
      return inserted > 0;
    },
    async sighted(existing, observation, actor, now) {
      await write(() =>
        sql.run(
          `UPDATE findings SET title = $1, detail = $2, line = $3, check_command = coalesce($4, check_command),
           last_session_id = $5, last_run_id = $6, occurrences = occurrences + 1, last_seen_at = $7 WHERE id = $8`,
          sightedValues(existing, observation, actor, now),
        ),
      );
    },
    async setState(id, state, now) {
      await write(() =>
        sql.run('UPDATE findings SET state = $1, state_changed_at = $2 WHERE id = $3', [state, now, id]),
      );
    },
    async insertEvent(findingId, from, to, reason, actor, now) {
      await sql.run(
        `INSERT INTO finding_events (finding_id, from_state, to_state, reason, source, session_id, run_id, created_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
        [findingId, from, to, reason, actor.source, actor.sessionId ?? null, actor.runId ?? null, now],
      );
    },
    dataVersion: async () => changes.generation('findings'),
    async oldestActiveSeen() {
      const row = await sql.one<{ at: number | null }>(
        "SELECT min(last_seen_at) AS at FROM findings WHERE state IN ('open', 'acknowledged')",
      );
      return row?.at ?? null;
    },
    active(scope) {
      const { where, params } = activeScope(scope);
      return sql.query<Row>(
        `SELECT ${COLUMNS} FROM findings WHERE state IN ('open', 'acknowledged') AND ${where}
         ORDER BY first_seen_at, id COLLATE "C"`,
        params,
      );
    },
    find: byId,
    list(filter) {
      const where: string[] = [];
      const params: unknown[] = [];
      const p = (value: unknown) => {
        params.push(value);
        return `$${params.length}`;
      };
      if (filter.states?.length) where.push(`state IN (${filter.states.map((s) => p(s)).join(', ')})`);
      if (filter.kind) where.push(`kind = ${p(filter.kind)}`);
      if (filter.sessionId) {
        const session = p(filter.sessionId);
        where.push(`(session_id = ${session} OR last_session_id = ${session})`);
      }
      return sql.query<Row>(
        `SELECT ${COLUMNS} FROM findings ${where.length ? `WHERE ${where.join(' AND ')}` : ''}
         ORDER BY last_seen_at DESC, id COLLATE "C" DESC LIMIT ${p(filter.limit ?? 50)}`,
        params,
      );
    },
    async events(filter) {
      const where: string[] = [];
      const params: unknown[] = [];
      if (filter.findingId) {
        params.push(filter.findingId);
        where.push(`e.finding_id = $${params.length}`);
      }
      if (filter.sessionId) {
        params.push(filter.sessionId);
        where.push(`e.session_id = $${params.length}`);
      }
      const clause = where.length ? `WHERE ${where.join(' AND ')}` : '';
      const events = await sql.query<FindingEvent & { title: string } & Record<string, unknown>>(
        `SELECT e.id, e.finding_id, e.from_state, e.to_state, e.reason, e.source, e.session_id, e.run_id,
           e.created_at, f.title AS title
         FROM finding_events e JOIN findings f ON f.id = e.finding_id
         ${clause} ORDER BY e.id DESC LIMIT $${params.length + 1}`,
        [...params, filter.limit ?? 20],
      );
      const total = await sql.one<{ n: number }>(
        `SELECT count(*) AS n FROM finding_events e ${clause}`,
        params,
      );
      return { events, total: Number(total?.n ?? 0) };
    },
    countsByStateAndKind(sessionId) {
      return sql.query<FindingCount & Record<string, unknown>>(
        `SELECT state, kind, count(*) AS n FROM findings ${sessionId ? 'WHERE session_id = $1 OR last_session_id = $1' : ''}
         GROUP BY state, kind ORDER BY state COLLATE "C", kind COLLATE "C"`,
        sessionId ? [sessionId] : [],
      );
    },
    async logSummary(sessionId) {
      const row = await sql.one<{ n: number; last: number | null }>(
        `SELECT count(*) AS n, max(created_at) AS last FROM finding_events ${sessionId ? 'WHERE session_id = $1' : ''}`,
        sessionId ? [sessionId] : [],
      );
      return { n: Number(row?.n ?? 0), last: row?.last ?? null };
    },
  };
}
