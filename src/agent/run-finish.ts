/**
 * A run's end on this node: its finish recorded (the row with its `run.finished` ledger event, the
 * bus event, the lease, the idle state) or, at a clean stop, handed over to a live node. Apart from
 * ./run-control.ts, which starts runs and drains the queue after the finish is committed.
 * @module
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { SvcError } from '../errors';
import type { SessionEventPayloads } from '../events/types';
import type { AgentRun, RunPatch, SessionAnnounce } from '../runs/run-ledger';
import type { FinishAlongside, FinishFirst } from '../runs/types';
import { type HeldStepEnd, LastEndFailed } from './last-step-end';
import type { RunOutcome } from './run-loop';
import { type AgentCore, statePayload } from './session-runtime';

/** The first wait before a finish is written again after the store was lost; doubled up to the cap. */
const FINISH_RETRY_MS = 500;
const FINISH_RETRY_CAP_MS = 4_000;
/**
 * At a close, how long a finish that lost the store still waits for it (from the first failure
 * seen closing): within the close's wait for its runs (`CLOSE_TIMEOUT_MS`, 5 s, ./run-cancel.ts),
 * its tries every `FINISH_CLOSE_RETRY_MS` at most.
 */
const FINISH_CLOSE_WAIT_MS = 3_000;
const FINISH_CLOSE_RETRY_MS = 250;

/**
 * `write` (the run's finish), again while the store is unreachable (PostgreSQL lost: `unavailable`):
 * the run stays running here, its waiters waiting, until the store is back and its end is
 * recorded, instead of a row left `running` that keeps the session busy on every node while this
 * one lives. Closing, only for a store lost (`storeLost`, not a statement refused) and only
 * `FINISH_CLOSE_WAIT_MS` (within the close's wait for its runs); then the error is thrown. Before a second attempt the row is read: a finish that was
 * committed but whose answer was lost is not written twice, and `found` then checks what else the
 * lost attempt carried (`storedFinish`), answering the row as it is then. Other errors are thrown
 * at once.
 */
async function untilStored(
  core: AgentCore,
  run: AgentRun,
  write: () => Promise<AgentRun>,
  found?: (stored: AgentRun) => Promise<AgentRun>,
): Promise<AgentRun> {
  const a = core.host;
  /** Closing: when the finish stops waiting for the store (`performance.now()`). */
  let closeBy: number | undefined;
  for (let attempt = 0; ; attempt++) {
    try {
      if (attempt > 0) {
        const stored = await a.runs.require(run.id);
        if (stored.status !== 'running' && stored.status !== 'queued') {
          // What the lost statement carried besides the finish, checked against what is stored.
          return found ? await found(stored) : stored;
        }
      }
      const row = await write();
      if (attempt > 0)
        a.log.info('run finish recorded after the store came back', {
          run_id: run.id,
          attempts: attempt + 1,
        });
      return row;
    } catch (error) {
      if (!(SvcError.is(error) && error.code === 'unavailable')) throw error;
      let wait = Math.min(FINISH_RETRY_MS * 2 ** attempt, FINISH_RETRY_CAP_MS);
      if (core.closing) {
        if (!storeLost(error)) throw error;
        closeBy ??= performance.now() + FINISH_CLOSE_WAIT_MS;
        const left = closeBy - performance.now();
        if (left <= 0) throw error;
        wait = Math.min(wait, left, FINISH_CLOSE_RETRY_MS);
      }
      if (attempt === 0)
        a.log.warn('run finish waits for the store', { run_id: run.id, error: error.message });
      await sleep(wait);
    }
  }
}

/**
 * The store went (its connection lost or unreachable, every pooled connection busy, the server
 * shutting down: SQLSTATE classes 08 and 57P), not a statement it refused (a PostgreSQL error is
 * `unavailable` too, reason `error`: src/store/postgres/errors.ts). A statement that was not
 * refused can be sent again once the store is back, as it was.
 */
function storeLost(error: unknown): boolean {
  if (!SvcError.is(error) || error.code !== 'unavailable') return false;
  const { reason, code } = (error.details ?? {}) as { reason?: unknown; code?: unknown };
  return reason !== 'error' || /^(08|57P)/.test(String(code ?? ''));
}

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
  /** Whether the attempt that kept `last` for a retry carried its events (`announce`, p-closehold). */
  let keptAnnounced = false;
  /**
   * The bus's stamp on the session events the statement sent last carried (`announce` joined),
   * if it did: a retry that finds the run finished has the bus deliver them as stored (`adopt`).
   */
  let joinedAt: number | undefined;
  const build = core.finishWrites.get(run.id);
  core.finishWrites.delete(run.id);
  try {
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
      finished_at: a.clock.now(),
    };
    const event = {
      status: outcome.status,
      reason: outcome.reason,
      ...(outcome.failure ? { failure: outcome.failure } : {}),
      steps: outcome.steps,
      usage: outcome.usage,
      cost: outcome.cost,
    };
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
    // up between its events) has the step end written alone before it.
    if (last && !announce) await lastAlone(last);
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
      // Finished by the statement whose answer was lost, or by another node meanwhile (its
      // recovery): what is stored is what the run's waiters, the compat answer and the session's
      // watchers are told (its status, usage, steps), not this node's outcome.
      const end = last;
      last = undefined;
      const alone = end ? await keptEnd(core, run, end, keptAnnounced) : false;
      const after = alone ? await a.runs.require(run.id).catch(() => stored) : stored;
      // Not running nor queued: `untilStored` reads it finished.
      published = finishedPayload(sessionId, run.id, {
        ...after,
        status: after.status as RunOutcome['status'],
      });
      // That statement carried `run.finished` and the idle state (and the step end's events): in
      // the log once it committed, delivered as stored, not published again. Its step end not
      // stored (`alone`): nothing of it committed.
      const at = joinedAt;
      if (at !== undefined && !alone) {
        deliver = () => void adoptFinish(core, sessionId, joinedTypes, at, published, idleJoined);
      }
      return after;
    });
    core.finished(row);
    if (!deliver) core.publish(sessionId, 'run.finished', published);
    a.log.info('run finished', {
      run_id: run.id,
      session_id: sessionId,
      status: published.status,
      ...(published.reason ? { reason: published.reason } : {}),
      ...(published.failure ? { code: published.failure.code } : {}),
      steps: outcome.steps,
      model: outcome.model,
    });
  } catch (error) {
    // The last step end failed alone: the run fails as a failing step end failed it, then finishes.
    if (error instanceof LastEndFailed) {
      if (build) core.finishWrites.set(run.id, build);
      rt.finishing = undefined;
      return await finishRun(core, run, await failedOutcome(error, outcome));
    }
    a.log.error('run finalize failed', { run_id: run.id, error });
    if (core.closing && storeLost(error)) lostAtClose(core, run, last);
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

/**
 * A step end kept for a retry that found the run finished (p-finishcheck, p-closehold Left 3): the
 * statement that carried it committed, its answer lost, or another node finished the run (its
 * recovery: `interrupted`) while this one waited for the store. Its `step.finished` stored says
 * which: written with the finish (its events in it where that attempt announced), or not written,
 * then sent alone now, after what the other node wrote (its events before this node's
 * `run.finished`). The read is retried with the finish's while the store is lost; the send alone
 * is not (one that committed but lost its answer would insert its rows twice): refused, what is
 * lost is logged (`run last step end lost`).
 */
async function keptEnd(
  core: AgentCore,
  run: AgentRun,
  end: HeldStepEnd,
  announced: boolean,
): Promise<boolean> {
  const a = core.host;
  const step = end.first.event.payload.step;
  const stored = await a.runs.events(run.id, { types: [end.first.event.type] }).catch((error: unknown) => {
    // The store lost: read again with the finish's retry; refused otherwise: taken as written, as before.
    if (storeLost(error)) throw error;
    a.log.warn('run last step end not checked', { run_id: run.id, step, error });
    return undefined;
  });
  if (!stored || stored.some((e) => e.payload.step === step)) {
    end.written(undefined, announced);
    return false;
  }
  a.log.warn('run finished elsewhere before its last step end; writing it alone', { run_id: run.id, step });
  try {
    await end.alone();
  } catch (error) {
    a.log.error('run last step end lost', {
      run_id: run.id,
      step,
      lost: [
        'the step’s messages finished and usage',
        end.first.event.type,
        ...end.events.map((e) => e.type),
      ],
      error,
    });
  }
  return true;
}

/**
 * The session events a finish's statement carried, found committed by its retry (its answer lost):
 * delivered as stored (`EventBus.adopt`), once, with their ids. Not found (the bus cannot adopt, or
 * that statement did not commit: another node finished the run): the finish's own published now,
 * `run.finished` as stored and the idle state, as a finish that carried none publishes them.
 */
async function adoptFinish(
  core: AgentCore,
  sessionId: string,
  types: readonly string[],
  createdAt: number,
  published: SessionEventPayloads['run.finished'],
  idle: boolean,
): Promise<void> {
  const bus = core.host.bus;
  const found = await (bus.adopt?.(sessionId, types, createdAt) ?? Promise.resolve(false)).catch(
    (error: unknown) => {
      core.host.log.warn('run finish’s stored events not read', { run_id: published.run_id, error });
      return false;
    },
  );
  if (found) return;
  core.host.log.info('run finish’s lost statement not found stored; its events published', {
    run_id: published.run_id,
  });
  core.publish(sessionId, 'run.finished', published);
  if (idle) core.publish(sessionId, 'state.changed', statePayload(sessionId, 'idle', null));
}

/**
 * The store lost at a close, not back within its wait (`untilStored`): what of the run's end is
 * not stored, said once. The row stays `running` until a recovery (the next start, or another
 * node's) marks it `interrupted`; nothing of this finish nor of the step end it kept is written.
 */
function lostAtClose(core: AgentCore, run: AgentRun, end: HeldStepEnd | undefined): void {
  core.host.log.error('run end lost at the close: the store unreachable', {
    run_id: run.id,
    session_id: run.session_id,
    lost: [
      'the run’s end (its row stays running until a recovery marks it interrupted)',
      'run.finished',
      ...(end
        ? [
            `step ${String(end.first.event.payload.step)}: its messages finished and usage`,
            end.first.event.type,
            ...end.events.map((e) => e.type),
          ]
        : []),
    ],
  });
}

/** The held step end alone (./last-step-end.ts); its failure is the run's (`LastEndFailed`). */
async function lastAlone(end: HeldStepEnd): Promise<void> {
  try {
    await end.alone();
  } catch (error) {
    throw new LastEndFailed(error, end.fail);
  }
}

/** The run's outcome once its last step end failed alone (its `error` event written by `fail`). */
async function failedOutcome(failed: LastEndFailed, outcome: RunOutcome): Promise<RunOutcome> {
  if (failed.fail) return await failed.fail(failed.error);
  const message = failed.error instanceof Error ? failed.error.message : String(failed.error);
  return { ...outcome, status: 'failed', reason: 'error', error: message };
}

/** `run.finished`'s session payload: the run's outcome here, or its row as stored. */
function finishedPayload(
  sessionId: string,
  runId: string,
  ended: Pick<RunOutcome, 'status' | 'steps' | 'usage' | 'cost'> & {
    reason?: string | null;
    failure?: SessionEventPayloads['run.finished']['failure'] | null;
  },
): SessionEventPayloads['run.finished'] {
  return {
    session_id: sessionId,
    run_id: runId,
    status: ended.status,
    ...(ended.reason ? { reason: ended.reason } : {}),
    ...(ended.failure ? { failure: ended.failure } : {}),
    steps: ended.steps,
    usage: { input_tokens: ended.usage.input_tokens, output_tokens: ended.usage.output_tokens },
    cost: ended.cost,
  };
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
