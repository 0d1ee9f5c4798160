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
import { covers } from './checks';
import { createFindingRepository, type FindingRow as Row } from './finding-repository';
import { ACTIVE, findingStatus, STALE_AFTER_MS } from './finding-status';
import type {
  Actor,
  Finding,
  FindingAction,
  FindingService,
  FindingState,
  Observation,
} from './finding-types';
import type { QualityDb } from './store';

export { STALE_AFTER_MS } from './finding-status';
export * from './finding-types';

const ACTIONS: Record<FindingAction, { from: FindingState[]; to: FindingState }> = {
  acknowledge: { from: ['open'], to: 'acknowledged' },
  waive: { from: ['open', 'acknowledged'], to: 'waived' },
  resolve: { from: ['open', 'acknowledged'], to: 'fixed' },
  mark_stale: { from: ['open', 'acknowledged'], to: 'stale' },
  reopen: { from: ['fixed', 'waived', 'stale'], to: 'open' },
};

const notFound = (id: string) =>
  new SvcError(
    'not_found',
    `finding_id: no finding "${id}"; get_finding_lifecycle_status lists the open ones`,
  );

export function createFindingService(deps: {
  db: QualityDb;
  clock: Clock;
  ids: Ids;
  bus: EventBus;
}): FindingService {
  const repo = createFindingRepository(deps.db);
  const toFinding = ({ fingerprint: _f, ...row }: Row): Finding => row;

  const transition = (row: Row, to: FindingState, reason: string, actor: Actor): Row => {
    const now = deps.clock.now();
    repo.setState(row.id, to, now);
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
    repo.insertEvent(row.id, from, to, reason, actor, now);
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

  const list: FindingService['list'] = (filter = {}) => repo.list(filter).map(toFinding);

  return {
    newReportFingerprint: () => `reported:${deps.ids.next('rep')}`,

    observe(observation, actor) {
      const now = deps.clock.now();
      const existing = repo.byFingerprint(observation.fingerprint);
      if (!existing) {
        const id = deps.ids.next('fnd');
        repo.insert(id, observation, actor, now);
        const row = repo.byId(id) as Row;
        record(row, null, 'open', openReason(observation), actor, now);
        return toFinding(row);
      }
      repo.sighted(existing, observation, actor, now);
      let row = repo.byId(existing.id) as Row;
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
      for (const row of repo.active({ with: 'check' })) {
        if (!row.check_key || !covers(check, row.check_key)) continue;
        fixed.push(toFinding(transition(row, 'fixed', `the check passed: ${check.label} (exit 0)`, actor)));
      }
      return fixed;
    },

    diagnosticsReported(path, present, actor) {
      const fixed: Finding[] = [];
      const still = new Set(present);
      for (const row of repo.active({ with: 'diagnostics_of', path })) {
        if (still.has(row.fingerprint)) continue;
        fixed.push(toFinding(transition(row, 'fixed', `diagnostics of ${path} no longer report it`, actor)));
      }
      return fixed;
    },

    fileChanged(path, change, actor) {
      if (change === 'delete') {
        for (const row of repo.active({ with: 'path', path })) {
          transition(row, 'stale', `${path} was deleted`, actor);
        }
        return;
      }
      if (!actor.sessionId) return;
      for (const row of repo.active({ with: 'touched_by', path, sessionId: actor.sessionId })) {
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
      return repo
        .active({ with: 'seen_before', cutoff })
        .map((row) =>
          toFinding(
            transition(
              row,
              'stale',
              `not observed for ${Math.round(STALE_AFTER_MS / 3_600_000)} hours`,
              actor,
            ),
          ),
        );
    },

    act(id, action, reason, actor) {
      const row = repo.byId(id);
      if (!row) throw notFound(id);
      const rule = ACTIONS[action];
      checkAction(row, action, rule.from);
      const why = reason?.trim() || `${action.replace('_', ' ')} by ${actor.source}`;
      return toFinding(transition(row, rule.to, why, actor));
    },

    get(id) {
      const row = repo.find(id);
      if (!row) throw notFound(id);
      return toFinding(row);
    },

    list,

    events: (filter = {}) => repo.events(filter),

    status: (options = {}) =>
      findingStatus(repo, (sessionId, limit) => list({ states: ACTIVE, sessionId, limit }), options),
  };
}

/** Throws unless the action applies to the finding. */
function checkAction(row: Row, action: FindingAction, from: FindingState[]): void {
  const id = row.id;
  if (!from.includes(row.state)) {
    throw new SvcError(
      'conflict',
      `finding_id: finding ${id} is ${row.state}; ${action} applies to ${from.join(' or ')} findings`,
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
