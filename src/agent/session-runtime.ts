/**
 * The agent's per-session runtime state in this process: the state machine (idle → running →
 * idle, with cancelling and compacting), the active run's controller, the waiters of runs and of
 * idleness, and the events that tell the surfaces (`state.changed`, `queue.changed`). The agent
 * service's parts (./prompt-queue.ts, ./run-control.ts, ./agent-service.ts) share one `AgentCore`.
 * @module
 */

import type { SessionEventPayloads, SessionEventType } from '../events/types';
import type { ResolvedModel } from '../providers/types';
import type { AgentRun } from '../runs/run-ledger';
import type { AgentDeps, AgentHost } from './deps';
import { textOf } from './history';
import { LastEnds } from './last-step-end';
import { refusedCall } from './refused';
import type { StopState } from './run-loop';
import type { StartAnswer } from './start-answer';
import type { FinishWrite, ResultWithoutText, RunResult, SessionState } from './types';

export interface Runtime {
  state: SessionState;
  runId: string | null;
  /** A compaction asked for during the active run (requestCompaction), with its reason. */
  compactRequested?: 'manual' | 'health_followon';
  controller?: AbortController;
  stop?: StopState;
  promise?: Promise<void>;
  idleWaiters: Set<() => void>;
  /**
   * A finished run is looking for the next queued prompt: the session shows `idle` meanwhile, but
   * `waitIdle` waits for the outcome (the next run, or idle with an empty queue).
   */
  draining?: boolean;
  /**
   * Runs this process queued on the session, counted: a finish trusts the queue its statement
   * read only when none was queued here while it was in flight (./run-finish.ts).
   */
  queuedHere?: number;
  /**
   * The run's finish statement carries its idle state (p-finishjoin): a stop from now on changes
   * nothing and publishes no `cancelling` (it would follow the idle state in the log).
   */
  finishing?: boolean;
  /**
   * The start's answer while its run is launched before it (p-pgoverlap, ./run-early.ts
   * `launchEarly`): a stop waits for it (`abortRun`), run by the answer itself.
   */
  starting?: StartAnswer;
}

interface Deferred {
  /** The run's result once it has ended; taking it marks the deferred as asked. */
  readonly promise: Promise<RunResult>;
  /** Whether anyone took `promise`: a run nobody waits for is settled without reading its result. */
  readonly asked: boolean;
  resolve(result: RunResult): void;
}

/** What the parts of the agent service share. */
export interface AgentCore {
  readonly deps: AgentDeps;
  readonly host: AgentHost;
  readonly runtimes: Map<string, Runtime>;
  readonly deferreds: Map<string, Deferred>;
  /**
   * Runs inserted claimed whose statement committed by itself (PostgreSQL's lone start,
   * p-pgstart2) but whose send failed before they were launched here: nothing runs them, so a
   * cancel request would wait for nobody; `cancelRun` ends them here (./run-cancel.ts).
   */
  readonly unlaunched: Set<string>;
  /** What a run's finish here writes for another domain (`AgentService.finishWith`), by run id. */
  readonly finishWrites: Map<string, FinishWrite>;
  /** Its runs' last step ends held for their finishes (./last-step-end.ts, p-pglast); close writes those left (p-closehold). */
  readonly lastEnds: LastEnds;
  /** True once close() began: no new runs start. */
  closing: boolean;
  runtime(sessionId: string): Runtime;
  /**
   * The writes of one step of the service (enqueue, claim and the start of the run up to its
   * first await on anything but the store; or a run's finish) in one SQLite transaction: one
   * commit, made before the returned promise settles, so the ledger rows are durable at the same
   * points as before (store/db.ts atomicallyAsync).
   */
  atomically<T>(fn: () => Promise<T>): Promise<T>;
  publish<T extends SessionEventType>(sessionId: string, type: T, payload: SessionEventPayloads[T]): void;
  /** `announced`: its state.changed was published already (p-pgstart4: with the lone start's statement). */
  setState(sessionId: string, state: SessionState, runId: string | null, announced?: boolean): void;
  /** The promise of a run's result, created on first ask. */
  deferred(runId: string): Deferred;
  /** Resolve the waiters of a finished run. */
  settle(runId: string): Promise<void>;
  /** Keep the model its sender resolved for a run (SendInput.resolved) until the run starts here. */
  hand(runId: string, model: ResolvedModel): void;
  /** The model handed for the run, once (later asks: undefined). */
  takeHanded(runId: string): ResolvedModel | undefined;
  /**
   * `runResult`, sharing the read of a run that has ended for a moment (RESULT_SHARED_MS): its
   * waiters and the surface that streams it ask for it at its end, one after the other.
   * `withText` false: the caller does not use the final text (the streamed compat answer sent it
   * already), so its message is not read; such an answer is shared with no other caller.
   */
  result(runId: string): Promise<RunResult>;
  result(runId: string, withText: false): Promise<ResultWithoutText>;
  /**
   * The run's row as its finish wrote it (UPDATE … RETURNING), in the finish's transaction: the
   * first `result` after it answers from it instead of reading the row back.
   */
  finished(run: AgentRun): void;
  /** Publishes the session's queue (queue.changed); the queued runs it read. */
  /** `known`: the queue as the caller has it (read just before, in this operation): not read again. */
  publishQueue(sessionId: string, known?: AgentRun[]): Promise<AgentRun[]>;
  notifyIdle(sessionId: string): void;
}

/**
 * At most this many handed models wait for their runs (runs queued behind a busy session, or
 * given to another node): past it the oldest is dropped, and its run resolves its model itself.
 */
const HANDED_MODELS = 256;

/** How long the result of a run that has ended is answered without reading it again. */
const RESULT_SHARED_MS = 2_000;

/**
 * Sets `id` in a map of entries kept for RESULT_SHARED_MS, dropping the expired ones. Entries are
 * (re)inserted last, so the map is in time order and the sweep stops at the first fresh one.
 */
function keepFresh<V extends { at: number }>(map: Map<string, V>, id: string, entry: V, now: number): void {
  for (const [key, old] of map) {
    if (now - old.at <= RESULT_SHARED_MS) break;
    map.delete(key);
  }
  map.delete(id);
  map.set(id, entry);
}

/**
 * Past this many runtimes, those at rest leave the map when the next session's is made: every
 * compat request is a session of its own, and a runtime per session kept for the life of the
 * process grew the service's heap without bound. A runtime at rest holds nothing a later call
 * needs (it is made again, idle, on the next ask); every change after an await goes to a runtime
 * that is not at rest (a controller, a run or waiters) or through `setState`, which looks it up.
 */
export const RESTING_RUNTIMES = 256;

/** Idle with nothing in flight: no run, controller, drain, compaction request or waiter. */
function atRest(rt: Runtime): boolean {
  return (
    rt.state === 'idle' &&
    rt.runId === null &&
    !rt.controller &&
    !rt.stop &&
    !rt.promise &&
    !rt.draining &&
    !rt.compactRequested &&
    rt.idleWaiters.size === 0
  );
}

export function createAgentCore(deps: AgentDeps, host: AgentHost): AgentCore {
  const runtimes = new Map<string, Runtime>();
  const deferreds = new Map<string, Deferred>();
  /** Results of runs that had ended when read, with when they were read. */
  const ended = new Map<string, { at: number; result: RunResult }>();
  const reading = new Map<string, Promise<RunResult>>();
  const handed = new Map<string, ResolvedModel>();
  const finishedRows = new Map<string, { at: number; run: AgentRun }>();
  // The map's size at which the runtimes at rest are dropped next (twice what stayed, at least
  // RESTING_RUNTIMES): a sweep now and then, not a walk of the map per new session.
  let sweepAt = RESTING_RUNTIMES;
  const sweep = (keep: string) => {
    for (const [id, rt] of runtimes) if (id !== keep && atRest(rt)) runtimes.delete(id);
    sweepAt = Math.max(RESTING_RUNTIMES, runtimes.size * 2);
  };
  /** AgentCore.result. */
  function result(runId: string): Promise<RunResult>;
  function result(runId: string, withText: false): Promise<ResultWithoutText>;
  async function result(runId: string, withText = true): Promise<RunResult | ResultWithoutText> {
    const now = host.clock.now();
    const known = ended.get(runId);
    if (known && now - known.at <= RESULT_SHARED_MS) return structuredClone(known.result);
    // A read already on its way (the run's waiters and its stream ask at the same moment): its
    // answer when the run had ended, else a read of this caller's own.
    const inflight = reading.get(runId);
    const shared = inflight && (await inflight.catch(() => undefined));
    if (shared && shared.status !== 'queued' && shared.status !== 'running') return structuredClone(shared);
    const finished = finishedRows.get(runId);
    const fresh = finished && now - finished.at <= RESULT_SHARED_MS ? finished.run : undefined;
    // Without its text: the finished row stays for a caller that wants the text.
    if (!withText) return await runResult(host, runId, fresh, false);
    finishedRows.delete(runId);
    const read = runResult(host, runId, fresh);
    reading.set(runId, read);
    let answer: RunResult;
    try {
      answer = await read;
    } finally {
      if (reading.get(runId) === read) reading.delete(runId);
    }
    if (answer.status !== 'queued' && answer.status !== 'running') {
      keepFresh(ended, runId, { at: now, result: answer }, now);
    }
    return answer;
  }
  const core: AgentCore = {
    deps,
    host,
    runtimes,
    deferreds,
    unlaunched: new Set(),
    finishWrites: new Map(),
    lastEnds: new LastEnds(),
    closing: false,
    runtime(sessionId) {
      let rt = runtimes.get(sessionId);
      if (!rt) {
        rt = { state: 'idle', runId: null, idleWaiters: new Set() };
        runtimes.set(sessionId, rt);
        if (runtimes.size > sweepAt) sweep(sessionId);
      }
      return rt;
    },
    atomically: async (fn) => host.store.transactions.run(fn),
    publish: (sessionId, type, payload) => host.bus.publish(sessionId, type, payload),
    setState(sessionId, state, runId, announced = false) {
      const rt = core.runtime(sessionId);
      if (rt.state === state && rt.runId === runId) return;
      rt.state = state;
      rt.runId = runId;
      if (!announced) core.publish(sessionId, 'state.changed', statePayload(sessionId, state, runId));
    },
    deferred(runId) {
      let d = deferreds.get(runId);
      if (!d) {
        // The promise is made when someone first asks for it: a run nobody waits for (a compat
        // request's, whose stream reads its result itself) makes none. `settle` resolves only an
        // asked deferred.
        let resolve: ((result: RunResult) => void) | undefined;
        let promise: Promise<RunResult> | undefined;
        d = {
          get promise() {
            promise ??= new Promise<RunResult>((r) => {
              resolve = r;
            });
            return promise;
          },
          get asked() {
            return promise !== undefined;
          },
          resolve: (result) => resolve?.(result),
        };
        deferreds.set(runId, d);
      }
      return d;
    },
    hand(runId, model) {
      handed.set(runId, model);
      if (handed.size > HANDED_MODELS) handed.delete(handed.keys().next().value as string);
    },
    takeHanded(runId) {
      const model = handed.get(runId);
      handed.delete(runId);
      return model;
    },
    async settle(runId) {
      handed.delete(runId);
      const d = deferreds.get(runId);
      if (!d) return;
      deferreds.delete(runId);
      // Nobody holds its promise (a compat request's run: its stream asks on its own): nothing to
      // read. A later `wait` finds no deferred and reads the ended run.
      if (d.asked) d.resolve(await core.result(runId));
    },
    finished(run) {
      const at = host.clock.now();
      keepFresh(finishedRows, run.id, { at, run }, at);
    },
    result,
    async publishQueue(sessionId, known) {
      const items = known ?? (await host.runs.queued(sessionId));
      core.publish(sessionId, 'queue.changed', queuePayload(sessionId, items));
      return items;
    },
    notifyIdle(sessionId) {
      const rt = core.runtime(sessionId);
      if (rt.state !== 'idle') return;
      for (const waiter of [...rt.idleWaiters]) waiter();
    },
  };
  return core;
}

/**
 * A run's result as the service answers it: the ledger row with the final answer's text.
 * `finished`: the row as the run's finish just wrote it (not read again). `withText` false: the
 * final message is not read and the answer has no `text`.
 */
export async function runResult(host: AgentHost, runId: string, finished?: AgentRun): Promise<RunResult>;
export async function runResult(
  host: AgentHost,
  runId: string,
  finished: AgentRun | undefined,
  withText: false,
): Promise<ResultWithoutText>;
export async function runResult(
  host: AgentHost,
  runId: string,
  finished?: AgentRun,
  withText = true,
): Promise<RunResult | ResultWithoutText> {
  const run = finished ?? (await host.runs.require(runId));
  const message =
    withText && run.result_message_id ? await host.sessions.getMessage(run.result_message_id) : undefined;
  const refused =
    run.status === 'completed' ? await refusedCall(host.runs, run.id, finished !== undefined) : null;
  const duration_ms =
    run.started_at !== null && run.finished_at !== null ? run.finished_at - run.started_at : null;
  // One literal each, not `{ ...head, ...tail }`: on Node 20 every property defined after a spread
  // goes through V8's runtime and gives the answer a map of its own (≈ 1 µs a property and a
  // megamorphic reader; docs/performance-log.md, p-sqlprofile). `text` where it always was (after
  // `refused`): the JSON answers keep their key order.
  if (!withText)
    return {
      run_id: run.id,
      session_id: run.session_id,
      parent_run_id: run.parent_run_id,
      family_session_id: run.family_session_id,
      status: run.status,
      reason: run.reason,
      error: run.error,
      failure: run.failure,
      refused,
      steps: run.steps,
      usage: run.usage,
      cost: run.cost,
      model: run.model,
      agent: run.agent,
      started_at: run.started_at,
      finished_at: run.finished_at,
      duration_ms,
    };
  return {
    run_id: run.id,
    session_id: run.session_id,
    parent_run_id: run.parent_run_id,
    family_session_id: run.family_session_id,
    status: run.status,
    reason: run.reason,
    error: run.error,
    failure: run.failure,
    refused,
    text: message ? textOf(message.parts) : '',
    steps: run.steps,
    usage: run.usage,
    cost: run.cost,
    model: run.model,
    agent: run.agent,
    started_at: run.started_at,
    finished_at: run.finished_at,
    duration_ms,
  };
}

/** The session's run in another live svc process, if any. */
export async function busyElsewhere(host: AgentHost, sessionId: string): Promise<AgentRun | undefined> {
  const running = await host.runs.running(sessionId);
  if (!running || running.runner === host.runs.owner.runner) return undefined;
  return host.runs.ownerAlive(running) ? running : undefined;
}

/** The session's state as a caller sees it: running when another process runs it. */
export async function stateOf(core: AgentCore, sessionId: string): Promise<SessionState> {
  const rt = core.runtime(sessionId);
  if (rt.state !== 'idle') return rt.state;
  return (await busyElsewhere(core.host, sessionId)) ? 'running' : 'idle';
}

/** Abort the session's active run in this process (the first stopper's status and reason win). */
export function abortRun(
  core: AgentCore,
  sessionId: string,
  reason: string,
  publishCancelling = true,
  abortReason: Error = new Error(reason),
) {
  const rt = core.runtime(sessionId);
  if (!rt.controller || rt.controller.signal.aborted) return;
  if (rt.starting) {
    // Launched during its start's round trip (p-pgoverlap): stopped once the start answered (a
    // failed start: nothing to stop), its `cancelling` after the start's events; what it holds
    // is written then, `stop.written` its promise. Stopped by the answer's settling itself, before
    // its promise resolves: the model request's gate, awaiting it, finds the run aborted (no order
    // of continuations between the two). A second ask in the window shares the first's.
    const stop = rt.stop!;
    const starting = rt.starting;
    if (starting.stopping) return;
    stop.written = starting.stopping = new Promise<void>((resolve, reject) => {
      starting.whenAnswered(() => {
        stop.written = undefined;
        abortRun(core, sessionId, reason, publishCancelling, abortReason);
        Promise.resolve(stop.written).then(resolve, reject);
      });
    });
    return;
  }
  rt.stop!.status ??= 'cancelled';
  rt.stop!.reason ??= reason;
  // A result held for the step's end goes first: its events before `cancelling`, as on SQLite.
  rt.stop!.release?.();
  if (publishCancelling && !rt.finishing) core.setState(sessionId, 'cancelling', rt.runId);
  rt.controller.abort(abortReason);
}

/** `state.changed`'s payload. */
export function statePayload(
  sessionId: string,
  state: SessionState,
  runId: string | null,
): SessionEventPayloads['state.changed'] {
  return { session_id: sessionId, state, ...(runId ? { run_id: runId } : {}) };
}

/** `queue.changed`'s payload: the session's queued runs, oldest first. */
export function queuePayload(
  sessionId: string,
  items: readonly Pick<AgentRun, 'id' | 'prompt'>[],
): SessionEventPayloads['queue.changed'] {
  return {
    session_id: sessionId,
    length: items.length,
    items: items.map((run) => ({ id: run.id, preview: preview(run.prompt) })),
  };
}

/** The first line of a prompt, at most 80 characters. */
export function preview(prompt: string): string {
  const line = prompt.trim().split('\n')[0].replace(/\s+/g, ' ');
  return line.length > 80 ? `${line.slice(0, 79)}…` : line;
}
