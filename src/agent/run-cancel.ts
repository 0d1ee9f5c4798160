/**
 * Stopping and awaiting runs: cancel a session's run (here, or through the ledger in another
 * process), cancel one run, wait for a run or for an idle session, and stop every run at close.
 * @module
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { handOverReason, SvcError } from '../errors';
import type { AgentRun } from '../runs/run-ledger';
import { removeQueued } from './prompt-queue';
import { recordFinished } from './run-finish';
import { type AgentCore, abortRun, busyElsewhere, runResult } from './session-runtime';
import type { AgentService, RunResult } from './types';

const WAIT_POLL_MS = 200;
/** How often a run this process queued (and holds a deferred for) is read while it waits. */
const DEFERRED_POLL_MS = 1000;
const CLOSE_TIMEOUT_MS = 5000;
/** After the runs' wait, how long the close waits for their held last step ends' writes (p-closehold). */
export const HELD_ENDS_CLOSE_MS = 2_000;

export async function cancelSession(
  core: AgentCore,
  sessionId: string,
  options: Parameters<AgentService['cancel']>[1] = {},
): Promise<ReturnType<AgentService['cancel']>> {
  const a = core.host;
  await a.sessions.require(sessionId);
  const rt = core.runtime(sessionId);
  let cancelled: string | null = null;
  if (rt.runId && rt.controller) {
    cancelled = rt.runId;
    abortRun(core, sessionId, options.reason ?? 'cancelled by the operator');
  } else {
    const other = await busyElsewhere(a, sessionId);
    if (other) {
      await a.runs.requestCancel(other.id);
      await a.runs.append(other.id, 'run.cancel_requested', {
        reason: options.reason ?? 'cancelled by the operator',
      });
      cancelled = other.id;
    }
  }
  const cleared: string[] = [];
  if (options.clearQueue) {
    for (const run of await a.runs.queued(sessionId)) {
      await removeQueued(core, run.id);
      cleared.push(run.id);
    }
  }
  return { cancelled_run_id: cancelled, cleared };
}

export async function cancelRun(
  core: AgentCore,
  runId: string,
  reason = 'cancelled by the operator',
): Promise<AgentRun> {
  const a = core.host;
  const run = await a.runs.require(runId);
  if (run.status === 'queued') return await removeQueued(core, runId);
  if (run.status !== 'running') {
    throw new SvcError(
      'conflict',
      `run ${runId} is ${run.status}; only queued or running runs can be cancelled`,
    );
  }
  const rt = core.runtime(run.session_id);
  if (rt.runId === runId && rt.controller) {
    abortRun(core, run.session_id, reason);
    // What the run held is written before the caller's next write to it (./run-types.ts StopState.written).
    await rt.stop?.written;
  } else if (core.unlaunched.delete(runId)) {
    return await endUnlaunched(core, run, reason);
  } else if (a.runs.ownerAlive(run)) {
    await a.runs.requestCancel(runId);
    await a.runs.append(runId, 'run.cancel_requested', { reason });
  } else {
    await a.runs.recover();
  }
  return await a.runs.require(runId);
}

/**
 * A run inserted claimed here that was never launched (`AgentCore.unlaunched`): cancelled as its
 * own finish would record it (the row with `run.finished`, the bus event), its waiters told.
 */
async function endUnlaunched(core: AgentCore, run: AgentRun, reason: string): Promise<AgentRun> {
  const a = core.host;
  const usage = { input_tokens: 0, output_tokens: 0, reasoning_tokens: 0, cached_input_tokens: 0 };
  const finished = { status: 'cancelled' as const, reason, steps: 0, finished_at: a.clock.now() };
  const event = { status: 'cancelled', reason, steps: 0, usage, cost: 0 };
  const { run: row } = await recordFinished(core, run.id, finished, event);
  core.finished(row);
  core.publish(run.session_id, 'run.finished', {
    session_id: run.session_id,
    run_id: run.id,
    status: 'cancelled',
    reason,
    steps: 0,
    usage: { input_tokens: 0, output_tokens: 0 },
    cost: 0,
  });
  await core.settle(run.id);
  return row;
}

export async function waitRun(
  core: AgentCore,
  runId: string,
  options: { signal?: AbortSignal } = {},
): Promise<RunResult> {
  const a = core.host;
  const d = core.deferreds.get(runId);
  if (d) return await waitDeferred(core, runId, d.promise, options);
  let run = await a.runs.require(runId);
  while (run.status === 'queued' || run.status === 'running') {
    await sleep(WAIT_POLL_MS, undefined, { signal: options.signal });
    if (run.status === 'running' && !a.runs.ownerAlive(run)) await a.runs.recover();
    run = await a.runs.require(runId);
  }
  return await runResult(a, runId);
}

/**
 * A run this process created and has not settled: its deferred answers. Its row is not read first
 * (a compat request's wait began with that read, beside its run's start statement: on PostgreSQL a
 * second connection whenever the two fell in different turns). A run queued here may be started by
 * another node (its drain takes the session's next queued run when its own run ends): this process
 * then never settles the deferred. So the row is read every DEFERRED_POLL_MS while the deferred is
 * pending (a run ended here settles first).
 */
async function waitDeferred(
  core: AgentCore,
  runId: string,
  promise: Promise<RunResult>,
  options: { signal?: AbortSignal },
): Promise<RunResult> {
  const a = core.host;
  const settled = options.signal ? abortable(promise, options.signal) : promise;
  for (;;) {
    const result = await settledWithin(settled, DEFERRED_POLL_MS);
    if (result) return result;
    const run = await a.runs.require(runId);
    if (run.status === 'queued' || run.status === 'running') continue;
    // Ended here: its deferred is settled after the finish's followers (the adaptive monitor's
    // handling of run.finished) went on, so the waiter keeps waiting for it.
    const owner = a.runs.owner;
    if (run.pid === owner.pid && run.host === owner.host && run.runner === (owner.runner ?? null))
      return settled;
    if (core.runtimes.get(run.session_id)?.runId === runId) return settled; // ending here
    core.deferreds.delete(runId);
    return await runResult(a, runId);
  }
}

export async function waitIdle(
  core: AgentCore,
  sessionId: string,
  options: { signal?: AbortSignal } = {},
): Promise<void> {
  const rt = core.runtime(sessionId);
  if (rt.state === 'idle' && !rt.draining) return;
  await new Promise<void>((resolve, reject) => {
    const done = () => {
      rt.idleWaiters.delete(done);
      options.signal?.removeEventListener('abort', onAbort);
      resolve();
    };
    const onAbort = () => {
      rt.idleWaiters.delete(done);
      reject(new SvcError('cancelled', 'stopped waiting'));
    };
    rt.idleWaiters.add(done);
    options.signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/**
 * Stop every run of this process (status `interrupted`) and wait for them, bounded. A durable run
 * the engine hands over stops without finishing: a live node adopts it (issue 19).
 */
export async function closeRuns(core: AgentCore): Promise<void> {
  core.closing = true;
  const handedOver = (await core.deps.durable?.handOver?.()) ?? new Set<string>();
  const active = [...core.runtimes.entries()].filter(([, rt]) => rt.controller && rt.promise);
  const why = 'svc shut down while the run was active';
  for (const [sessionId, rt] of active) {
    const handOver = rt.runId !== null && handedOver.has(rt.runId);
    if (handOver) rt.stop!.handedOver = true;
    rt.stop!.status ??= 'interrupted';
    rt.stop!.reason ??= why;
    abortRun(core, sessionId, why, false, handOver ? handOverReason() : new Error(why));
  }
  const settled = Promise.all(active.map(([, rt]) => rt.promise));
  await Promise.race([settled, sleep(CLOSE_TIMEOUT_MS, undefined, { ref: false })]);
  // A run that held its last step end and did not reach its finish: its end written before the
  // store closes (sent alone at the stop's release, or now), bounded (p-closehold).
  await core.lastEnds.close(core.host.log, HELD_ENDS_CLOSE_MS);
}

/** The promise's value if it settles within `ms`, else undefined (its rejection is thrown). */
async function settledWithin<T>(promise: Promise<T>, ms: number): Promise<T | undefined> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const tick = new Promise<undefined>((resolve) => {
    timer = setTimeout(() => resolve(undefined), ms);
  });
  try {
    return await Promise.race([promise, tick]);
  } finally {
    clearTimeout(timer);
  }
}

function abortable<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(new SvcError('cancelled', 'stopped waiting'));
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(new SvcError('cancelled', 'stopped waiting'));
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        resolve(value);
      },
      (error) => {
        signal.removeEventListener('abort', onAbort);
        reject(error);
      },
    );
  });
}
