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
import { createChangeQueue } from '../util/change-queue';
import type { Clock, Ids } from '../util/ids';
import { covers } from './checks';
import type { FindingRepository, FindingRow as Row } from './finding-repository';
import { ACTIVE, findingStatus, STALE_AFTER_MS } from './finding-status';
import type {
  Actor,
  Finding,
  FindingAction,
  FindingService,
  FindingState,
  Observation,
} from './finding-types';

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
  /** `findings`, `finding_events` (./finding-repository.ts or its PostgreSQL twin). */
  findings: FindingRepository;
  clock: Clock;
  ids: Ids;
  bus: EventBus;
}): FindingService {
  const skip = createSweepSkip(deps.findings);
  deps = { ...deps, findings: skip.repo };
  const repo = deps.findings;
  const toFinding = ({ fingerprint: _f, ...row }: Row): Finding => row;

  // Changes run one at a time, in call order: the observer calls from sync listeners without
  // awaiting, and a file change must apply after the failing check seen before it.
  const { serial, settled, flush, idle } = createChangeQueue();

  const { transition, record } = createTransitions(deps);

  const listNow = async (filter: Parameters<FindingService['list']>[0] = {}) =>
    (await repo.list(filter)).map(toFinding);

  const observe = async (observation: Observation, actor: Actor): Promise<Finding> => {
    const now = deps.clock.now();
    let existing = await repo.byFingerprint(observation.fingerprint);
    if (!existing) {
      const id = deps.ids.next('fnd');
      // The database decides: another writer may have opened it since; then this is a sighting.
      if (await repo.insert(id, observation, actor, now)) {
        const row = (await repo.byId(id)) as Row;
        await record(row, null, 'open', openReason(observation), actor, now);
        return toFinding(row);
      }
      existing = (await repo.byFingerprint(observation.fingerprint)) as Row;
    }
    await repo.sighted(existing, observation, actor, now);
    let row = (await repo.byId(existing.id)) as Row;
    if (row.state === 'fixed' || row.state === 'stale') {
      row = await transition(
        row,
        'open',
        `observed again after it was ${row.state}: ${openReason(observation)}`,
        actor,
      );
    }
    return toFinding(row);
  };

  return {
    newReportFingerprint: () => `reported:${deps.ids.next('rep')}`,

    observe: (observation, actor) => serial(() => observe(observation, actor)),

    checkPassed: (check, actor) =>
      serial(async () =>
        each(await repo.active({ with: 'check' }), async (row) => {
          if (!row.check_key || !covers(check, row.check_key)) return undefined;
          return toFinding(
            await transition(row, 'fixed', `the check passed: ${check.label} (exit 0)`, actor),
          );
        }),
      ),

    diagnosticsReported: (path, present, actor) =>
      serial(async () => {
        const still = new Set(present);
        return each(await repo.active({ with: 'diagnostics_of', path }), async (row) => {
          if (still.has(row.fingerprint)) return undefined;
          return toFinding(
            await transition(row, 'fixed', `diagnostics of ${path} no longer report it`, actor),
          );
        });
      }),

    fileChanged: (path, change, actor) =>
      serial(async () => {
        if (change === 'delete') {
          for (const row of await repo.active({ with: 'path', path })) {
            await transition(row, 'stale', `${path} was deleted`, actor);
          }
          return;
        }
        if (!actor.sessionId) return;
        for (const row of await repo.active({ with: 'touched_by', path, sessionId: actor.sessionId })) {
          await transition(
            row,
            'acknowledged',
            `session ${actor.sessionId} changed ${path} after the finding was observed`,
            actor,
          );
        }
      }),

    sweep: (actor) =>
      serial(async () => {
        const cutoff = deps.clock.now() - STALE_AFTER_MS;
        return await skip.pass(cutoff, async () =>
          each(await repo.active({ with: 'seen_before', cutoff }), async (row) =>
            toFinding(
              await transition(
                row,
                'stale',
                `not observed for ${Math.round(STALE_AFTER_MS / 3_600_000)} hours`,
                actor,
              ),
            ),
          ),
        );
      }),

    act: (id, action, reason, actor) =>
      serial(async () => {
        const row = await repo.byId(id);
        if (!row) throw notFound(id);
        const rule = ACTIONS[action];
        checkAction(row, action, rule.from);
        const why = reason?.trim() || `${action.replace('_', ' ')} by ${actor.source}`;
        return toFinding(await transition(row, rule.to, why, actor));
      }),

    get: (id) =>
      settled(async () => {
        const row = await repo.find(id);
        if (!row) throw notFound(id);
        return toFinding(row);
      }),

    list: (filter = {}) => settled(() => listNow(filter)),

    events: (filter = {}) => settled(() => repo.events(filter)),

    status: (options = {}) =>
      settled(() =>
        findingStatus(repo, (sessionId, limit) => listNow({ states: ACTIVE, sessionId, limit }), options),
      ),

    flush,
    sweepsNothing: () => idle() && skip.skipsNow(deps.clock.now() - STALE_AFTER_MS),
  };
}

/** A finding's state change: stored, logged and announced on the bus. */
function createTransitions(deps: { findings: FindingRepository; clock: Clock; bus: EventBus }) {
  const repo = deps.findings;
  const transition = async (row: Row, to: FindingState, reason: string, actor: Actor): Promise<Row> => {
    const now = deps.clock.now();
    await repo.setState(row.id, to, now);
    await record(row, row.state, to, reason, actor, now);
    return { ...row, state: to, state_changed_at: now };
  };

  const record = async (
    row: Row,
    from: FindingState | null,
    to: FindingState,
    reason: string,
    actor: Actor,
    now: number,
  ) => {
    await repo.insertEvent(row.id, from, to, reason, actor, now);
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
  return { transition, record };
}

/** Each row in order, moved by `step` (the findings it returns are collected). */
async function each(rows: Row[], step: (row: Row) => Promise<Finding | undefined>): Promise<Finding[]> {
  const moved: Finding[] = [];
  for (const row of rows) {
    const finding = await step(row);
    if (finding) moved.push(finding);
  }
  return moved;
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

/**
 * Every run's end sweeps (a compat request is a run). The pass is skipped when it would find
 * nothing: no commit by another process since the last pass (`repo.dataVersion`: SQLite's
 * data_version, PostgreSQL's change generation of `findings`, migration 35), no write by this one
 * (`repo` counts them), and no active finding's last sighting older than the cutoff as of the last
 * pass. A repository that cannot tell (no `dataVersion`, or undefined: PostgreSQL while its LISTEN
 * is not in place) runs every pass.
 */
function createSweepSkip(findings: FindingRepository) {
  let writes = 0;
  let last: { version: number; writes: number; oldest: number } | undefined;
  const counted =
    <A extends unknown[], R>(write: (...args: A) => R) =>
    (...args: A): R => {
      writes++;
      return write(...args);
    };
  const repo: FindingRepository = {
    ...findings,
    insert: counted(findings.insert),
    sighted: counted(findings.sighted),
    setState: counted(findings.setState),
    insertEvent: counted(findings.insertEvent),
  };
  return {
    repo,
    /** A pass now would be skipped, answered at once where the repository can (SQLite). */
    skipsNow(cutoff: number): boolean {
      if (!last || !findings.dataVersionNow) return false;
      return last.writes === writes && cutoff <= last.oldest && last.version === findings.dataVersionNow();
    },
    async pass<T>(cutoff: number, sweep: () => Promise<T[]>): Promise<T[]> {
      const version = await repo.dataVersion?.();
      if (last && last.version === version && last.writes === writes && cutoff <= last.oldest) return [];
      last = undefined;
      const swept = await sweep();
      if (version !== undefined && repo.oldestActiveSeen) {
        const oldest = (await repo.oldestActiveSeen()) ?? Number.POSITIVE_INFINITY;
        last = { version, writes, oldest };
      }
      return swept;
    },
  };
}
