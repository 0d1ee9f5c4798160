/**
 * The finding lifecycle: problems observed in the workspace during work, and what became of them.
 *
 * A finding comes from a failing check (a test, lint or typecheck command run with bash), a
 * diagnostics error, or an agent's explicit report. States: `open` → `acknowledged` (someone works
 * on it: the session changed files after it was seen, or said so) → `fixed` (the same check later
 * passes, the diagnostics no longer report it, or a reported finding is resolved) / `waived`
 * (accepted as is) / `stale` (its file was deleted, it was not observed for STALE_AFTER_MS, or it
 * was marked stale). A fixed or stale finding observed again reopens. Every transition is a row
 * in the finding log and a `finding.changed` bus event on the session it happened in.
 * @module
 */
import { SvcError } from '../errors';
import type { EventBus } from '../events/bus';
import type { Clock, Ids } from '../util/ids';
import { covers, type ShellCheck } from './checks';
import { type QualityDb, readOr } from './store';

export type FindingState = 'open' | 'acknowledged' | 'fixed' | 'waived' | 'stale';
export type FindingKind = 'check' | 'diagnostic' | 'reported';
export const FINDING_STATES: readonly FindingState[] = ['open', 'acknowledged', 'fixed', 'waived', 'stale'];
export const FINDING_KINDS: readonly FindingKind[] = ['check', 'diagnostic', 'reported'];

/** Open findings not observed again for this long go stale (swept when a run finishes). */
export const STALE_AFTER_MS = 7 * 24 * 3600 * 1000;

export interface Finding {
  id: string;
  kind: FindingKind;
  state: FindingState;
  title: string;
  /** Evidence: a failing check's output tail, a diagnostic's message, a report's description. */
  detail: string | null;
  severity: 'error' | 'warning';
  path: string | null;
  line: number | null;
  /** The check whose passing run fixes it (`<cwd>::<signature>`). */
  check_key: string | null;
  check_command: string | null;
  check_kind: string | null;
  session_id: string | null;
  run_id: string | null;
  last_session_id: string | null;
  last_run_id: string | null;
  occurrences: number;
  first_seen_at: number;
  last_seen_at: number;
  state_changed_at: number;
}

export interface FindingEvent {
  id: number;
  finding_id: string;
  /** null when the finding was opened. */
  from_state: FindingState | null;
  to_state: FindingState;
  reason: string;
  /** What caused it: bash, diagnostics, agent, operator, file_change, sweep. */
  source: string;
  session_id: string | null;
  run_id: string | null;
  created_at: number;
}

export interface Observation {
  kind: FindingKind;
  fingerprint: string;
  title: string;
  detail?: string;
  severity?: 'error' | 'warning';
  path?: string;
  line?: number;
  checkKey?: string;
  checkCommand?: string;
  checkKind?: string;
}

export interface Actor {
  sessionId?: string;
  runId?: string;
  /** bash, diagnostics, agent, operator, file_change, sweep. */
  source: string;
}

export type FindingAction = 'acknowledge' | 'waive' | 'resolve' | 'mark_stale' | 'reopen';

export interface FindingLifecycleStatus {
  counts: Record<FindingState, number> & { total: number };
  /** Open and acknowledged findings by kind. */
  active_by_kind: Record<FindingKind, number>;
  /** Open and acknowledged findings, most recently seen first. */
  open: Finding[];
  events_total: number;
  last_event_at: number | null;
  stale_after_hours: number;
  sources: { kind: FindingKind; observed_from: string; fixed_by: string }[];
}

export interface FindingService {
  /** Open a finding, or count another sighting (reopening a fixed or stale one). */
  observe(observation: Observation, actor: Actor): Finding;
  /** A check passed: fix the open findings it covers. */
  checkPassed(check: ShellCheck, actor: Actor): Finding[];
  /** A complete diagnostics run of `path` reported exactly these error fingerprints. */
  diagnosticsReported(path: string, present: readonly string[], actor: Actor): Finding[];
  /** A session changed (or deleted) a file. */
  fileChanged(path: string, change: 'create' | 'modify' | 'delete', actor: Actor): void;
  /** Open findings not seen for STALE_AFTER_MS go stale. */
  sweep(actor: Actor): Finding[];
  act(id: string, action: FindingAction, reason: string | undefined, actor: Actor): Finding;
  get(id: string): Finding;
  list(filter?: {
    states?: FindingState[];
    kind?: FindingKind;
    sessionId?: string;
    limit?: number;
  }): Finding[];
  events(filter?: { findingId?: string; sessionId?: string; limit?: number }): {
    events: (FindingEvent & { title: string })[];
    total: number;
  };
  status(options?: { limit?: number; sessionId?: string }): FindingLifecycleStatus;
  /** A new id for an explicitly reported finding's fingerprint. */
  newReportFingerprint(): string;
}

const ACTIONS: Record<FindingAction, { from: FindingState[]; to: FindingState }> = {
  acknowledge: { from: ['open'], to: 'acknowledged' },
  waive: { from: ['open', 'acknowledged'], to: 'waived' },
  resolve: { from: ['open', 'acknowledged'], to: 'fixed' },
  mark_stale: { from: ['open', 'acknowledged'], to: 'stale' },
  reopen: { from: ['fixed', 'waived', 'stale'], to: 'open' },
};

const ACTIVE: FindingState[] = ['open', 'acknowledged'];

type Row = Omit<Finding, 'line'> & { line: number | null; fingerprint: string };

export function createFindingService(deps: {
  db: QualityDb;
  clock: Clock;
  ids: Ids;
  bus: EventBus;
}): FindingService {
  const db = () => deps.db.write();
  const toFinding = ({ fingerprint: _f, ...row }: Row): Finding => row;

  const byId = (id: string) => db().prepare('SELECT * FROM findings WHERE id = ?').get(id) as Row | undefined;

  const transition = (row: Row, to: FindingState, reason: string, actor: Actor): Row => {
    const now = deps.clock.now();
    db().prepare('UPDATE findings SET state = ?, state_changed_at = ? WHERE id = ?').run(to, now, row.id);
    record(row, row.state, to, reason, actor, now);
    return { ...row, state: to, state_changed_at: now };
  };

  const record = (
    row: Row,
    from: FindingState | null,
    to: FindingState,
    reason: string,
    actor: Actor,
    now: number,
  ) => {
    db()
      .prepare(
        `INSERT INTO finding_events (finding_id, from_state, to_state, reason, source, session_id, run_id, created_at)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
      )
      .run(row.id, from, to, reason, actor.source, actor.sessionId ?? null, actor.runId ?? null, now);
    const sessionId = actor.sessionId ?? row.last_session_id ?? row.session_id;
    if (sessionId) {
      deps.bus.publish(sessionId, 'finding.changed', {
        session_id: sessionId,
        finding_id: row.id,
        kind: row.kind,
        from,
        to,
        reason,
        ...(actor.runId ? { run_id: actor.runId } : {}),
      });
    }
  };

  const activeWhere = (extra: string) =>
    db().prepare(
      `SELECT * FROM findings WHERE state IN ('open', 'acknowledged') AND ${extra} ORDER BY first_seen_at, id`,
    );

  const list: FindingService['list'] = (filter = {}) => {
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
      deps.db,
      [] as Row[],
      (handle) =>
        handle
          .prepare(
            `SELECT * FROM findings ${where.length ? `WHERE ${where.join(' AND ')}` : ''}
           ORDER BY last_seen_at DESC, id DESC LIMIT ?`,
          )
          .all(...params, filter.limit ?? 50) as Row[],
    ).map(toFinding);
  };

  return {
    newReportFingerprint: () => `reported:${deps.ids.next('rep')}`,

    observe(observation, actor) {
      const now = deps.clock.now();
      const existing = db()
        .prepare('SELECT * FROM findings WHERE fingerprint = ?')
        .get(observation.fingerprint) as Row | undefined;
      if (!existing) {
        const id = deps.ids.next('fnd');
        db()
          .prepare(
            `INSERT INTO findings (id, kind, fingerprint, state, title, detail, severity, path, line, check_key,
               check_command, check_kind, session_id, run_id, last_session_id, last_run_id, occurrences,
               first_seen_at, last_seen_at, state_changed_at)
             VALUES (?, ?, ?, 'open', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 1, ?, ?, ?)`,
          )
          .run(
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
          );
        const row = byId(id) as Row;
        record(row, null, 'open', openReason(observation), actor, now);
        return toFinding(row);
      }
      db()
        .prepare(
          `UPDATE findings SET title = ?, detail = ?, line = ?, check_command = coalesce(?, check_command),
             last_session_id = ?, last_run_id = ?, occurrences = occurrences + 1, last_seen_at = ? WHERE id = ?`,
        )
        .run(
          observation.title,
          observation.detail ?? existing.detail,
          observation.line ?? existing.line,
          observation.checkCommand ?? null,
          actor.sessionId ?? existing.last_session_id,
          actor.runId ?? existing.last_run_id,
          now,
          existing.id,
        );
      let row = byId(existing.id) as Row;
      if (row.state === 'fixed' || row.state === 'stale') {
        row = transition(
          row,
          'open',
          `observed again after it was ${row.state}: ${openReason(observation)}`,
          actor,
        );
      }
      return toFinding(row);
    },

    checkPassed(check, actor) {
      const fixed: Finding[] = [];
      for (const row of activeWhere('check_key IS NOT NULL').all() as Row[]) {
        if (!row.check_key || !covers(check, row.check_key)) continue;
        fixed.push(toFinding(transition(row, 'fixed', `the check passed: ${check.label} (exit 0)`, actor)));
      }
      return fixed;
    },

    diagnosticsReported(path, present, actor) {
      const fixed: Finding[] = [];
      const still = new Set(present);
      for (const row of activeWhere("kind = 'diagnostic' AND path = ?").all(path) as Row[]) {
        if (still.has(row.fingerprint)) continue;
        fixed.push(toFinding(transition(row, 'fixed', `diagnostics of ${path} no longer report it`, actor)));
      }
      return fixed;
    },

    fileChanged(path, change, actor) {
      if (change === 'delete') {
        for (const row of activeWhere('path = ?').all(path) as Row[]) {
          transition(row, 'stale', `${path} was deleted`, actor);
        }
        return;
      }
      if (!actor.sessionId) return;
      const rows = activeWhere(
        "state = 'open' AND (path = ? OR (kind != 'diagnostic' AND path IS NULL AND last_session_id = ?))",
      ).all(path, actor.sessionId) as Row[];
      for (const row of rows) {
        transition(
          row,
          'acknowledged',
          `session ${actor.sessionId} changed ${path} after the finding was observed`,
          actor,
        );
      }
    },

    sweep(actor) {
      const cutoff = deps.clock.now() - STALE_AFTER_MS;
      const rows = activeWhere('last_seen_at < ?').all(cutoff) as Row[];
      return rows.map((row) =>
        toFinding(
          transition(row, 'stale', `not observed for ${Math.round(STALE_AFTER_MS / 3_600_000)} hours`, actor),
        ),
      );
    },

    act(id, action, reason, actor) {
      const row = byId(id);
      if (!row)
        throw new SvcError(
          'not_found',
          `finding_id: no finding "${id}"; get_finding_lifecycle_status lists the open ones`,
        );
      const rule = ACTIONS[action];
      if (!rule.from.includes(row.state)) {
        throw new SvcError(
          'conflict',
          `finding_id: finding ${id} is ${row.state}; ${action} applies to ${rule.from.join(' or ')} findings`,
          { details: { finding_id: id, state: row.state, action } },
        );
      }
      if (action === 'resolve' && row.kind !== 'reported') {
        throw new SvcError(
          'invalid_input',
          `action: a ${row.kind} finding is fixed by evidence, not by hand: ${row.kind === 'check' ? `run the check again (${row.check_command ?? 'the same command'}); a passing run fixes it` : `run diagnostics on ${row.path} again; a run without the error fixes it`}. Use waive to accept it as is`,
          { details: { finding_id: id, kind: row.kind } },
        );
      }
      const why = reason?.trim() || `${action.replace('_', ' ')} by ${actor.source}`;
      return toFinding(transition(row, rule.to, why, actor));
    },

    get(id) {
      const row = readOr(
        deps.db,
        undefined,
        (handle) => handle.prepare('SELECT * FROM findings WHERE id = ?').get(id) as Row | undefined,
      );
      if (!row)
        throw new SvcError(
          'not_found',
          `finding_id: no finding "${id}"; get_finding_lifecycle_status lists the open ones`,
        );
      return toFinding(row);
    },

    list,

    events(filter = {}) {
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
      return readOr(deps.db, { events: [], total: 0 }, (handle) => {
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
    },

    status(options = {}) {
      const counts = { open: 0, acknowledged: 0, fixed: 0, waived: 0, stale: 0, total: 0 };
      const active: Record<FindingKind, number> = { check: 0, diagnostic: 0, reported: 0 };
      const session = options.sessionId ? 'WHERE session_id = ? OR last_session_id = ?' : '';
      const params = options.sessionId ? [options.sessionId, options.sessionId] : [];
      const rows = readOr(
        deps.db,
        [] as { state: FindingState; kind: FindingKind; n: number }[],
        (handle) =>
          handle
            .prepare(`SELECT state, kind, count(*) AS n FROM findings ${session} GROUP BY state, kind`)
            .all(...params) as { state: FindingState; kind: FindingKind; n: number }[],
      );
      for (const row of rows) {
        counts[row.state] += row.n;
        counts.total += row.n;
        if (ACTIVE.includes(row.state)) active[row.kind] += row.n;
      }
      const log = readOr(
        deps.db,
        { n: 0, last: null as number | null },
        (handle) =>
          handle
            .prepare(
              `SELECT count(*) AS n, max(created_at) AS last FROM finding_events ${options.sessionId ? 'WHERE session_id = ?' : ''}`,
            )
            .get(...(options.sessionId ? [options.sessionId] : [])) as { n: number; last: number | null },
      );
      return {
        counts,
        active_by_kind: active,
        open: list({ states: ACTIVE, sessionId: options.sessionId, limit: options.limit ?? 20 }),
        events_total: log.n,
        last_event_at: log.last,
        stale_after_hours: Math.round(STALE_AFTER_MS / 3_600_000),
        sources: [
          {
            kind: 'check',
            observed_from:
              'bash runs of test, lint and typecheck commands (npm test, vitest, pytest, go test, cargo test, tsc, eslint, biome…) that exit non-zero',
            fixed_by:
              'a later passing run of the same check (or of the same tool with fewer arguments) in the same directory',
          },
          {
            kind: 'diagnostic',
            observed_from: 'errors the diagnostics tool reports',
            fixed_by: 'a later complete diagnostics run of the file that no longer reports the error',
          },
          {
            kind: 'reported',
            observed_from: 'the finding tool (action report)',
            fixed_by: 'finding action resolve, or a passing run of the check given with the report',
          },
        ],
      };
    },
  };
}

function openReason(observation: Observation): string {
  switch (observation.kind) {
    case 'check':
      return `the check failed: ${observation.title}`;
    case 'diagnostic':
      return `diagnostics reported: ${observation.title}`;
    case 'reported':
      return `reported: ${observation.title}`;
    default: {
      const never: never = observation.kind;
      return String(never);
    }
  }
}
