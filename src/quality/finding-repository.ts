/**
 * The finding lifecycle's tables (`findings`, `finding_events`): every statement the finding
 * service runs. Writes use the app database; reads answer empty when there is none yet (./store.ts).
 * @module
 */

import { dataVersion } from '../store/data-version';
import { statementCache } from '../store/statement-cache';
import type { Actor, Finding, FindingEvent, FindingKind, FindingState, Observation } from './finding-types';
import { type QualityDb, readOr } from './store';

/** A stored finding: the finding and its fingerprint. */
export type FindingRow = Omit<Finding, 'line'> & { line: number | null; fingerprint: string };

export interface FindingListFilter {
  states?: FindingState[];
  kind?: FindingKind;
  sessionId?: string;
  limit?: number;
}

/** Which active (open or acknowledged) findings to read, oldest first. */
export type ActiveScope =
  | { with: 'check' }
  | { with: 'diagnostics_of'; path: string }
  | { with: 'path'; path: string }
  /** Open findings of this path, or path-less non-diagnostic ones last seen by the session. */
  | { with: 'touched_by'; path: string; sessionId: string }
  | { with: 'seen_before'; cutoff: number };

/** The finding lifecycle's repository (issue 18: async; PostgreSQL twin ./pg-finding-repository.ts). */
export interface FindingRepository {
  byFingerprint(fingerprint: string): Promise<FindingRow | undefined>;
  byId(id: string): Promise<FindingRow | undefined>;
  /**
   * Insert a new open finding; false (and nothing written) when a finding with its fingerprint
   * exists already: the database decides, so two writers cannot open the same finding twice.
   */
  insert(id: string, observation: Observation, actor: Actor, now: number): Promise<boolean>;
  /** Another sighting of an existing finding. */
  sighted(existing: FindingRow, observation: Observation, actor: Actor, now: number): Promise<void>;
  setState(id: string, state: FindingState, now: number): Promise<void>;
  insertEvent(
    findingId: string,
    from: FindingState | null,
    to: FindingState,
    reason: string,
    actor: Actor,
    now: number,
  ): Promise<void>;
  active(scope: ActiveScope): Promise<FindingRow[]>;
  /**
   * A number that moves when another process commits to `findings`, so the stale sweep can tell
   * nothing changed since its last pass: SQLite's `PRAGMA data_version`; on PostgreSQL the table's
   * change generation (../store/postgres/table-changes.ts), undefined (cannot tell: sweep) while
   * this node does not listen for the table's changes or writes it.
   */
  dataVersion?(): Promise<number | undefined>;
  /** `dataVersion` answered at once (SQLite); absent where the store cannot. */
  dataVersionNow?(): number;
  /** With `dataVersion`: the oldest last sighting of an active finding (null: none is active). */
  oldestActiveSeen?(): Promise<number | null>;
  /** Reads (empty without a database). */
  find(id: string): Promise<FindingRow | undefined>;
  list(filter: FindingListFilter): Promise<FindingRow[]>;
  events(filter: FindingEventFilter): Promise<FindingEventPage>;
  countsByStateAndKind(sessionId?: string): Promise<FindingCount[]>;
  logSummary(sessionId?: string): Promise<{ n: number; last: number | null }>;
}

export interface FindingEventFilter {
  findingId?: string;
  sessionId?: string;
  limit?: number;
}

export interface FindingEventPage {
  events: (FindingEvent & { title: string })[];
  total: number;
}

export interface FindingCount {
  state: FindingState;
  kind: FindingKind;
  n: number;
}

/** The insert's values, in column order (shared with the PostgreSQL twin). */
export function findingInsertValues(
  id: string,
  observation: Observation,
  actor: Actor,
  now: number,
): unknown[] {
  return [
    id,
    observation.kind,
    observation.fingerprint,
    observation.title,
    observation.detail ?? null,
    observation.severity ?? 'error',
    observation.path ?? null,
    observation.line ?? null,
    observation.checkKey ?? null,
    observation.checkCommand ?? null,
    observation.checkKind ?? null,
    actor.sessionId ?? null,
    actor.runId ?? null,
    actor.sessionId ?? null,
    actor.runId ?? null,
    now,
    now,
    now,
  ];
}

/** The sighting's values: title, detail, line, check_command, last session, last run, now, id. */
export function sightedValues(
  existing: FindingRow,
  observation: Observation,
  actor: Actor,
  now: number,
): unknown[] {
  return [
    observation.title,
    observation.detail ?? existing.detail,
    observation.line ?? existing.line,
    observation.checkCommand ?? null,
    actor.sessionId ?? existing.last_session_id,
    actor.runId ?? existing.last_run_id,
    now,
    existing.id,
  ];
}

const ACTIVE_SCOPES: Record<ActiveScope['with'], string> = {
  check: 'check_key IS NOT NULL',
  diagnostics_of: "kind = 'diagnostic' AND path = ?",
  path: 'path = ?',
  touched_by:
    "state = 'open' AND (path = ? OR (kind != 'diagnostic' AND path IS NULL AND last_session_id = ?))",
  seen_before: 'last_seen_at < ?',
};

const scopeParams = (scope: ActiveScope): unknown[] => {
  switch (scope.with) {
    case 'check':
      return [];
    case 'diagnostics_of':
    case 'path':
      return [scope.path];
    case 'touched_by':
      return [scope.path, scope.sessionId];
    case 'seen_before':
      return [scope.cutoff];
  }
};

export function createFindingRepository(qdb: QualityDb): FindingRepository {
  const db = () => qdb.write();
  const sql = statementCache(db);
  return {
    byFingerprint: async (fingerprint) =>
      db().prepare('SELECT * FROM findings WHERE fingerprint = ?').get(fingerprint) as FindingRow | undefined,
    byId: async (id) => db().prepare('SELECT * FROM findings WHERE id = ?').get(id) as FindingRow | undefined,
    async insert(id, observation, actor, now) {
      const result = db()
        .prepare(
          `INSERT INTO findings (id, kind, fingerprint, state, title, detail, severity, path, line, check_key,
             check_command, check_kind, session_id, run_id, last_session_id, last_run_id, occurrences,
             first_seen_at, last_seen_at, state_changed_at)
           VALUES (?, ?, ?, 'open', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 1, ?, ?, ?)
           ON CONFLICT (fingerprint) DO NOTHING`,
        )
        .run(...findingInsertValues(id, observation, actor, now));
      return result.changes > 0;
    },
    async sighted(existing, observation, actor, now) {
      db()
        .prepare(
          `UPDATE findings SET title = ?, detail = ?, line = ?, check_command = coalesce(?, check_command),
             last_session_id = ?, last_run_id = ?, occurrences = occurrences + 1, last_seen_at = ? WHERE id = ?`,
        )
        .run(...sightedValues(existing, observation, actor, now));
    },
    async setState(id, state, now) {
      db().prepare('UPDATE findings SET state = ?, state_changed_at = ? WHERE id = ?').run(state, now, id);
    },
    async insertEvent(findingId, from, to, reason, actor, now) {
      db()
        .prepare(
          `INSERT INTO finding_events (finding_id, from_state, to_state, reason, source, session_id, run_id, created_at)
           VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
        )
        .run(findingId, from, to, reason, actor.source, actor.sessionId ?? null, actor.runId ?? null, now);
    },
    // The sweep asks at every run's end: inside a transaction the version is read once, shared
    // with the other stores' memos (../store/data-version.ts), as no other connection commits then.
    dataVersion: async () => dataVersion(db()),
    dataVersionNow: () => dataVersion(db()),
    oldestActiveSeen: async () =>
      (
        sql("SELECT min(last_seen_at) AS at FROM findings WHERE state IN ('open', 'acknowledged')").get() as {
          at: number | null;
        }
      ).at,
    async active(scope) {
      return db()
        .prepare(
          `SELECT * FROM findings WHERE state IN ('open', 'acknowledged') AND ${ACTIVE_SCOPES[scope.with]} ORDER BY first_seen_at, id`,
        )
        .all(...scopeParams(scope)) as FindingRow[];
    },
    async find(id) {
      return readOr(
        qdb,
        undefined,
        (handle) => handle.prepare('SELECT * FROM findings WHERE id = ?').get(id) as FindingRow | undefined,
      );
    },
    list: async (filter) => listFindings(qdb, filter),
    events: async (filter) => findingEvents(qdb, filter),
    async countsByStateAndKind(sessionId) {
      const session = sessionId ? 'WHERE session_id = ? OR last_session_id = ?' : '';
      const params = sessionId ? [sessionId, sessionId] : [];
      return readOr(
        qdb,
        [] as FindingCount[],
        (handle) =>
          handle
            .prepare(`SELECT state, kind, count(*) AS n FROM findings ${session} GROUP BY state, kind`)
            .all(...params) as FindingCount[],
      );
    },
    async logSummary(sessionId) {
      return readOr(
        qdb,
        { n: 0, last: null as number | null },
        (handle) =>
          handle
            .prepare(
              `SELECT count(*) AS n, max(created_at) AS last FROM finding_events ${sessionId ? 'WHERE session_id = ?' : ''}`,
            )
            .get(...(sessionId ? [sessionId] : [])) as { n: number; last: number | null },
      );
    },
  };
}

function listFindings(qdb: QualityDb, filter: FindingListFilter): FindingRow[] {
  const where: string[] = [];
  const params: unknown[] = [];
  if (filter.states?.length) {
    where.push(`state IN (${filter.states.map(() => '?').join(', ')})`);
    params.push(...filter.states);
  }
  if (filter.kind) {
    where.push('kind = ?');
    params.push(filter.kind);
  }
  if (filter.sessionId) {
    where.push('(session_id = ? OR last_session_id = ?)');
    params.push(filter.sessionId, filter.sessionId);
  }
  return readOr(
    qdb,
    [] as FindingRow[],
    (handle) =>
      handle
        .prepare(
          `SELECT * FROM findings ${where.length ? `WHERE ${where.join(' AND ')}` : ''}
         ORDER BY last_seen_at DESC, id DESC LIMIT ?`,
        )
        .all(...params, filter.limit ?? 50) as FindingRow[],
  );
}

function findingEvents(qdb: QualityDb, filter: FindingEventFilter): FindingEventPage {
  const where: string[] = [];
  const params: unknown[] = [];
  if (filter.findingId) {
    where.push('e.finding_id = ?');
    params.push(filter.findingId);
  }
  if (filter.sessionId) {
    where.push('e.session_id = ?');
    params.push(filter.sessionId);
  }
  const clause = where.length ? `WHERE ${where.join(' AND ')}` : '';
  return readOr(qdb, { events: [], total: 0 }, (handle) => {
    const events = handle
      .prepare(
        `SELECT e.*, f.title AS title FROM finding_events e JOIN findings f ON f.id = e.finding_id
         ${clause} ORDER BY e.id DESC LIMIT ?`,
      )
      .all(...params, filter.limit ?? 20) as (FindingEvent & { title: string })[];
    const total = (
      handle.prepare(`SELECT count(*) AS n FROM finding_events e ${clause}`).get(...params) as {
        n: number;
      }
    ).n;
    return { events, total };
  });
}
