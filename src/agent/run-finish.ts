/**
 * A run's end on this node: its finish recorded (the row with its `run.finished` ledger event, the
 * bus event, the lost store's retry in ./finish-retry.ts, the lease, the idle state) or, at a clean
 * stop, handed over to a live node. Apart from ./run-control.ts, which starts runs and drains the
 * queue after the finish is committed.
 * @module
 */
import { SvcError } from '../errors';
import type { SessionEventPayloads } from '../events/types';
import type { AgentRun, RunPatch, SessionAnnounce } from '../runs/run-ledger';
import type { FinishAlongside, FinishFirst } from '../runs/types';
import {
  finishedPayload,
  foundFinished,
  type LoneEnd,
  loneEnd,
  lostAtClose,
  storeLost,
  untilStored,
} from './finish-retry';
import { type HeldStepEnd, LastEndFailed } from './last-step-end';
import type { RunOutcome } from './run-loop';
import { type AgentCore, statePayload } from './session-runtime';

/**
 * A run's row finished and its `run.finished` ledger event: one statement where the ledger can
 * (`updateAndAppend`, which with `queue` also tells whether the session has queued runs), else the
 * update then the append.
 */
export async function recordFinished(
  core: AgentCore,
  runId: string,
  finished: RunPatch,
  event: Record<string, unknown>,
  queue = false,
  alongside?: FinishAlongside,
  announce?: SessionAnnounce,
  first?: FinishFirst,
): Promise<{ run: AgentRun; queued?: boolean; deliver?: () => void }> {
  const runs = core.host.runs;
  if (runs.updateAndAppend) {
    // With the run's last step end: one attempt, its failure the caller's (it writes them apart).
    if (first)
      return await runs.updateAndAppend(runId, finished, 'run.finished', event, {
        queue,
        ...(alongside ? { alongside } : {}),
        ...(announce ? { announce } : {}),
        first,
      });
    if (!alongside)
      return await runs.updateAndAppend(runId, finished, 'run.finished', event, { queue, announce });
    try {
      return await runs.updateAndAppend(runId, finished, 'run.finished', event, {
        queue,
        alongside,
        announce,
      });
    } catch (error) {
      // The other domain's write failed the statement (or the store went): the finish alone, as
      // before it rode here; the other domain writes its own (never told `written`).
      if (SvcError.is(error) && error.code === 'unavailable') throw error;
      core.host.log.warn('run finish with its alongside write failed; finishing alone', {
        run_id: runId,
        error,
      });
      return await runs.updateAndAppend(runId, finished, 'run.finished', event, { queue });
    }
  }
  // SQLite: where the queue drains next, the update tells whether the session has queued runs.
  if (queue && runs.updateQueued) {
    const { run, queued } = await runs.updateQueued(runId, finished);
    // SQLite: appended at the call, no promise (p-syncrepo).
    if (!runs.appendNow?.(runId, 'run.finished', event)) await runs.append(runId, 'run.finished', event);
    if (alongside?.write.now) alongsideNow(core, runId, alongside);
    return { run, queued };
  }
  const run = await runs.update(runId, finished);
  if (!runs.appendNow?.(runId, 'run.finished', event)) await runs.append(runId, 'run.finished', event);
  if (alongside?.write.now) alongsideNow(core, runId, alongside);
  return { run };
}

/**
 * SQLite: another domain's write and its event right after `run.finished`, in the finish's
 * transaction (a compat request's row end: its outcome body fewer, p-syncrepo). Failing, the
 * finish stands and that domain writes its own (never told `written`), as on PostgreSQL.
 */
function alongsideNow(core: AgentCore, runId: string, alongside: FinishAlongside): void {
  const runs = core.host.runs;
  try {
    if (!runs.appendNow || !alongside.write.now?.()) return;
    alongside.written(runs.appendNow(runId, alongside.event.type, alongside.event.payload));
  } catch (error) {
    if (SvcError.is(error) && error.code === 'unavailable') throw error;
    core.host.log.warn('run finish with its alongside write failed; finishing alone', {
      run_id: runId,
      error,
    });
  }
}

/** The run stopped here unfinished at a clean stop; a live node adopts it (still `running`). */
export async function handedOver(core: AgentCore, run: AgentRun, outcome: RunOutcome): Promise<void> {
  core.host.log.info('run handed over to a live node', { run_id: run.id, steps: outcome.steps });
  // Its last step end held for a finish that is not this node's (./last-step-end.ts): alone.
  await core.lastEnds.release(run.id, core.host.log);
  await core.deps.runLeases?.end(run);
  const rt = core.runtime(run.session_id);
  rt.controller = undefined;
  rt.stop = undefined;
  rt.promise = undefined;
}

/**
 * What follows a finish: whether the queue drains next and, when the finish's statement told it,
 * the session's queue (`[]`: empty, no read needed; undefined: the drain reads it).
 */
export interface FinishNext {
  drains: boolean;
  queue?: AgentRun[];
}

/** The run's end recorded (row, ledger, events, lease, the idle state); what follows it. */
export async function finishRun(core: AgentCore, run: AgentRun, outcome: RunOutcome): Promise<FinishNext> {
  const a = core.host;
  const sessionId = run.session_id;
  const drains = outcome.status === 'completed' && !core.closing && !run.parent_run_id;
  const rt = core.runtime(sessionId);
  // Runs this node queues on the session from now on may commit after the finish's queue read.
  const queuedHere = rt.queuedHere ?? 0;
  let empty = false;
  /** The finish's statement carried `run.finished` and the idle state: delivers them. */
  let deliver: (() => void) | undefined;
  let idleJoined = false;
  // The run's last step end, held for this statement (./last-step-end.ts, p-pglast).
  let last = await core.lastEnds.take(run.id);
  /** The step end a finish that cannot carry it sends alone first, in its write (`LoneEnd`). */
  let lone: LoneEnd | undefined;
  /** Whether the attempt that kept `last` for a retry carried its events (`announce`, p-closehold). */
  let keptAnnounced = false;
  /** The bus's stamp on the events the statement sent last carried (`announce` joined), if it did. */
  let joinedAt: number | undefined;
  const build = core.finishWrites.get(run.id);
  core.finishWrites.delete(run.id);
  try {
    const { finished, event } = finishedWrites(outcome, a.clock.now());
    // The row and `run.finished` together (one statement where it can); the row answers the result.
    // Where the queue drains next, the statement also tells whether the session has queued runs.
    // Another domain's write in the finish's statement (`AgentService.finishWith`): the first
    // attempt only (a retry after a lost store reads the row first; the other domain writes its own).
    let alongside = build?.({ status: outcome.status, reason: outcome.reason, usage: outcome.usage });
    let published = finishedPayload(sessionId, run.id, outcome);
    // `run.finished` and the idle state in the finish's statement (PostgreSQL, p-finishjoin), first
    // attempt only; not when the run gives a lease up between them (an await: they were apart).
    let announce = finishAnnounce(core, run, published, (at) => {
      joinedAt = at;
    });
    // The step end's events go first in the finish's; a finish that carries none (a lease to give
    // up between its events) has the step end written alone before it, in `write` (`LoneEnd`).
    if (last && !announce) lone = loneEnd(core, run, last, lastAlone);
    if (last && announce) announce = { ...announce, events: [...last.events, ...announce.events] };
    if (!announce) last = undefined;
    rt.finishing = announce !== undefined;
    idleJoined = announce?.events.some((e) => e.type === 'state.changed') === true;
    /** The events the first attempt's statement carries, in order (`adopt`'s types). */
    const joinedTypes = announce?.events.map((e) => e.type) ?? [];
    const write = async (): Promise<AgentRun> => {
      const along = alongside;
      const ann = announce;
      const end = last;
      alongside = undefined;
      announce = undefined;
      last = undefined;
      joinedAt = undefined;
      if (lone) await lone.write();
      if (end) {
        let result: unknown;
        const written = await recordFinished(core, run.id, finished, event, drains, along, ann, {
          ...end.first,
          written: (answered) => {
            result = answered;
          },
        }).catch((error: unknown) => {
          // The store went (p-closehold, `storeLost`): neither was written; the step end stays with the finish,
          // both written in one statement once the store is back (`untilStored`), its events then
          // published before `run.finished`. Written apart, the step end alone would fail too and
          // fail the run, its held message and deltas lost while the finish waited for the store.
          // Closing too: `untilStored` waits for the store within the close's wait, then gives up
          // (what is lost logged below: written apart, both would be refused as well).
          if (storeLost(error)) {
            last = end;
            keptAnnounced = ann !== undefined;
            throw error;
          }
          // Neither written: the step end alone, then the finish alone (its events published
          // after it, the compat row's end its own), as each was before.
          a.log.warn('run finish with its last step end failed; writing them apart', {
            run_id: run.id,
            error,
          });
          return undefined;
        });
        if (written) {
          // The step's completions published before `run.finished` where the statement did not carry them.
          end.written(result, written.deliver !== undefined);
          empty = written.queued === false;
          deliver = written.deliver;
          return written.run;
        }
        await lastAlone(end);
        joinedAt = undefined;
      }
      const written = await recordFinished(
        core,
        run.id,
        finished,
        event,
        drains,
        end ? undefined : along,
        end ? undefined : ann,
      );
      empty = written.queued === false;
      deliver = written.deliver;
      return written.run;
    };
    const row = await untilStored(core, run, write, async (stored) => {
      // The step end kept: the finish's (`last`) or one sent alone first whose send lost the store.
      const end = last ?? lone?.take();
      last = undefined;
      const found = await foundFinished(core, run, stored, {
        end,
        announced: keptAnnounced,
        joinedAt,
        types: joinedTypes,
        idle: idleJoined,
      }).catch((error: unknown) => {
        // The store lost in its check or its send alone: kept for the next try's.
        last = end;
        throw error;
      });
      published = found.published;
      deliver = found.deliver;
      return found.row;
    });
    core.finished(row);
    if (!deliver) core.publish(sessionId, 'run.finished', published);
    logFinished(core, published, outcome);
  } catch (error) {
    // The last step end failed alone: the run fails as a failing step end failed it, then finishes.
    if (error instanceof LastEndFailed) {
      if (build) core.finishWrites.set(run.id, build);
      rt.finishing = undefined;
      return await finishRun(core, run, await failedOutcome(error, outcome));
    }
    a.log.error('run finalize failed', { run_id: run.id, error });
    if (core.closing && storeLost(error)) lostAtClose(core, run, last ?? lone?.take());
  }
  // No await when there was no lease: `run.finished` and the idle state below are one stretch,
  // so the bus appends them together on PostgreSQL (its queue starts after a microtask).
  const released = core.deps.runLeases?.end(run);
  if (released) await released;
  rt.controller = undefined;
  rt.stop = undefined;
  rt.promise = undefined;
  // A request the run did not reach a step boundary for ends with it (it was for this run).
  rt.compactRequested = undefined;
  rt.draining = drains;
  rt.finishing = undefined;
  core.setState(sessionId, 'idle', null, deliver !== undefined && idleJoined);
  // The statement's events to their listeners now, the session idle here as they say.
  deliver?.();
  return { drains, ...(empty && (rt.queuedHere ?? 0) === queuedHere ? { queue: [] } : {}) };
}

/** The `run finished` log line: what is stored (`published`), with this node's steps and model. */
function logFinished(
  core: AgentCore,
  published: SessionEventPayloads['run.finished'],
  outcome: RunOutcome,
): void {
  core.host.log.info('run finished', {
    run_id: published.run_id,
    session_id: published.session_id,
    status: published.status,
    ...(published.reason ? { reason: published.reason } : {}),
    ...(published.failure ? { code: published.failure.code } : {}),
    steps: outcome.steps,
    model: outcome.model,
  });
}

/** The run's row as it finished (`RunPatch`) and its `run.finished` ledger event's payload. */
function finishedWrites(outcome: RunOutcome, now: number) {
  const finished = {
    status: outcome.status,
    reason: outcome.reason,
    error: outcome.error,
    failure: outcome.failure,
    steps: outcome.steps,
    usage: outcome.usage,
    cost: outcome.cost,
    model: outcome.model,
    result_message_id: outcome.result_message_id,
    finished_at: now,
  };
  const event = {
    status: outcome.status,
    reason: outcome.reason,
    ...(outcome.failure ? { failure: outcome.failure } : {}),
    steps: outcome.steps,
    usage: outcome.usage,
    cost: outcome.cost,
  };
  return { finished, event };
}

/**
 * The held step end alone (./last-step-end.ts); its failure is the run's (`LastEndFailed`). With
 * `kept`: a store lost in its send keeps it (`HeldStepEnd.alone`'s `keep`), told, the error thrown
 * as it is for the finish's retry (`untilStored`).
 */
async function lastAlone(end: HeldStepEnd, kept?: () => void): Promise<void> {
  try {
    await end.alone(kept !== undefined);
  } catch (error) {
    if (kept && storeLost(error)) {
      kept();
      throw error;
    }
    throw new LastEndFailed(error, end.fail);
  }
}

/** The run's outcome once its last step end failed alone (its `error` event written by `fail`). */
async function failedOutcome(failed: LastEndFailed, outcome: RunOutcome): Promise<RunOutcome> {
  if (failed.fail) return await failed.fail(failed.error);
  const message = failed.error instanceof Error ? failed.error.message : String(failed.error);
  return { ...outcome, status: 'failed', reason: 'error', error: message };
}

/**
 * The session events a finish's statement may carry (a ledger with `updateAndAppend`): `run.finished`
 * and, unless the session shows idle already, its idle state, published one after the other with
 * nothing between (no lease to give up: `RunLeases.end` would await its release).
 */
function finishAnnounce(
  core: AgentCore,
  run: AgentRun,
  payload: SessionEventPayloads['run.finished'],
  joined: (createdAt: number) => void,
): SessionAnnounce | undefined {
  if (!core.host.runs.updateAndAppend || core.deps.runLeases?.releases(run)) return undefined;
  const sessionId = run.session_id;
  const rt = core.runtime(sessionId);
  const idle = rt.state === 'idle' && rt.runId === null;
  return {
    sessionId,
    events: [
      { type: 'run.finished', payload },
      ...(idle ? [] : [{ type: 'state.changed', payload: statePayload(sessionId, 'idle', null) }]),
    ],
    joined,
  };
}
