/**
 * A run's finish when the store is lost (PostgreSQL, ./run-finish.ts): written again once it is
 * back (`untilStored`), and, when the retry finds the run finished, what the lost statement
 * carried checked against what is stored (`foundFinished`: its step end, its session events, the
 * stored outcome); at a close, what is lost said once (`lostAtClose`).
 * @module
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { SvcError } from '../errors';
import type { SessionEventPayloads } from '../events/types';
import type { AgentRun } from '../runs/run-ledger';
import type { HeldStepEnd } from './last-step-end';
import type { RunOutcome } from './run-loop';
import { type AgentCore, statePayload } from './session-runtime';
import { storeLost } from './store-lost';

export { storeLost };

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
export async function untilStored(
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
 * A retry found the run finished (`untilStored`'s `found`): by the statement whose answer was lost,
 * or by another node meanwhile (its recovery). The kept step end is checked first (`keptEnd`). What
 * is stored is what the run's waiters, the compat answer and the session's watchers are told (its
 * status, usage, steps; read again after a step end sent alone), not this node's outcome. The
 * statement sent last carried `run.finished` and the idle state (`joinedAt`: the bus's stamp on
 * them) and its step end was not found unwritten: `deliver` has the bus deliver them as stored
 * (`adoptFinish`), not published again.
 */
export async function foundFinished(
  core: AgentCore,
  run: AgentRun,
  stored: AgentRun,
  kept: {
    end: HeldStepEnd | undefined;
    announced: boolean;
    joinedAt: number | undefined;
    types: readonly string[];
    idle: boolean;
  },
): Promise<{ row: AgentRun; published: SessionEventPayloads['run.finished']; deliver?: () => void }> {
  const alone = kept.end ? await keptEnd(core, run, kept.end, kept.announced) : false;
  const row = alone ? await core.host.runs.require(run.id).catch(() => stored) : stored;
  // Not running nor queued: `untilStored` reads it finished.
  const published = finishedPayload(run.session_id, run.id, {
    ...row,
    status: row.status as RunOutcome['status'],
  });
  const at = kept.joinedAt;
  if (at === undefined || alone) return { row, published };
  const deliver = () => void adoptFinish(core, run.session_id, kept.types, at, published, kept.idle);
  return { row, published, deliver };
}

/**
 * A step end kept for a retry that found the run finished (p-finishcheck, p-closehold Left 3): the
 * statement that carried it committed, its answer lost, or another node finished the run (its
 * recovery: `interrupted`) while this one waited for the store. Its `step.finished` stored says
 * which: written with the finish (its events in it where that attempt announced), or not written,
 * then sent alone now, after what the other node wrote (its events before this node's
 * `run.finished`). The read is retried with the finish's while the store is lost, and so is the
 * send alone (kept as sent: the retry checks its `step.finished` first, so one that committed but
 * lost its answer is not inserted twice); refused, what is lost is logged (`run last step end lost`).
 */
async function keptEnd(
  core: AgentCore,
  run: AgentRun,
  end: HeldStepEnd,
  announced: boolean,
): Promise<boolean> {
  const a = core.host;
  const step = end.first.event.payload.step;
  if ((await stepEndStored(core, run, end)) !== false) {
    end.written(undefined, announced);
    return false;
  }
  a.log.warn('run finished elsewhere before its last step end; writing it alone', { run_id: run.id, step });
  try {
    await end.alone(true);
  } catch (error) {
    // The store lost again: kept as sent (`HeldStepEnd.alone`'s `keep`), checked and sent with the
    // finish's next try, nothing inserted twice (p-lastalone).
    if (storeLost(error)) throw error;
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
 * The last step end a finish that cannot carry it (a lease to give up between its events) sends
 * alone first, in its write (p-lastalone): `write` sends it (`send`, its failure the run's) and,
 * when that send finds the store lost, keeps it (it may have committed, its answer lost) and
 * throws for the finish's retry (`untilStored`); the next `write` checks its `step.finished`
 * first (`stepEndStored`): stored, counted written, else sent anew; nothing inserted twice.
 * `take`: the end still kept (a retry that found the run finished checks it as the finish's own,
 * `keptEnd`; a close says it lost), nothing left to write.
 */
export interface LoneEnd {
  write(): Promise<void>;
  take(): HeldStepEnd | undefined;
}

export function loneEnd(
  core: AgentCore,
  run: AgentRun,
  end: HeldStepEnd,
  send: (end: HeldStepEnd, kept: () => void) => Promise<void>,
): LoneEnd {
  let left: HeldStepEnd | undefined = end;
  let lost = false;
  return {
    async write() {
      if (!left) return;
      if (lost && (await stepEndStored(core, run, left)) !== false) left.written(undefined, false);
      else
        await send(left, () => {
          lost = true;
        });
      left = undefined;
    },
    take() {
      const kept = left;
      left = undefined;
      return kept;
    },
  };
}

/**
 * Whether a kept step end is stored (its step's `step.finished` in the run's events): the statement
 * that carried it committed, its answer lost. The store lost: thrown (read again with the
 * finish's retry); the read refused: undefined, logged (`run last step end not checked`), and the
 * caller takes it as written, as before.
 */
export async function stepEndStored(
  core: AgentCore,
  run: AgentRun,
  end: HeldStepEnd,
): Promise<boolean | undefined> {
  const a = core.host;
  const step = end.first.event.payload.step;
  const stored = await a.runs.events(run.id, { types: [end.first.event.type] }).catch((error: unknown) => {
    if (storeLost(error)) throw error;
    a.log.warn('run last step end not checked', { run_id: run.id, step, error });
    return undefined;
  });
  return stored?.some((e) => e.payload.step === step);
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
export function lostAtClose(core: AgentCore, run: AgentRun, end: HeldStepEnd | undefined): void {
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

/** `run.finished`'s session payload: the run's outcome here, or its row as stored. */
export function finishedPayload(
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
