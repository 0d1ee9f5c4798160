/**
 * The prompt queue of the agent service: a session's `queued` runs in the ledger (FIFO, durable,
 * visible to every process). send and enqueue add a run and start it when the session is idle;
 * a queued run can be removed.
 * @module
 */
import { SvcError } from '../errors';
import type { AgentRun, ClaimedCreate, ClaimResult } from '../runs/run-ledger';
import type { ClaimAlongside } from '../runs/types';
import type { Session } from '../sessions/session-store';
import type { HeldPrompt } from '../sessions/types';
import { type AgentKind, agentKind } from './agent-kinds';
import { promptMessage } from './prompt-message';
import { drainQueue, launchClaimed, startEvents } from './run-control';
import { type EarlyLaunch, launchEarly } from './run-early';
import { promptPhase } from './run-loop';
import { type AgentCore, busyElsewhere, preview, stateOf } from './session-runtime';
import type { AgentService, QueueStatus, SendInput } from './types';

/** A run inserted already claimed (`RunLedger.createClaimed`). */
type ClaimedStart = Extract<ClaimResult, { ok: true }> & { announced?: boolean; alone?: boolean };

/**
 * Queue the run in `session` (its row as the caller just read it in this transaction; `created`:
 * the caller created it in this transaction, so it has no other run).
 */
async function enqueueRun(
  core: AgentCore,
  input: SendInput,
  kind: AgentKind,
  session: Session,
  created = false,
  claimWith?: ClaimedCreate,
): Promise<{ run: AgentRun; queued: AgentRun[]; claimed?: ClaimedStart }> {
  const a = core.host;
  if (!input.prompt.trim()) throw new SvcError('invalid_input', 'prompt: must not be empty');
  if (input.maxSteps !== undefined && (!Number.isInteger(input.maxSteps) || input.maxSteps < 1)) {
    throw new SvcError('invalid_input', `max_steps: must be a positive integer, got ${input.maxSteps}`);
  }
  // A session the caller created with its INSERT held: that INSERT goes with the run's.
  const riding = created && input.session === session ? input.sessionInsert : undefined;
  const newRun = {
    session_id: session.id,
    // A session without a parent is its own family's root (a parent never changes).
    family_session_id: session.parent_id ? await a.sessions.root(session.id) : session.id,
    agent: kind.id,
    model: input.model ?? null,
    origin: input.origin ?? 'api',
    prompt: input.prompt,
    options: {
      ...(input.maxSteps !== undefined ? { max_steps: input.maxSteps } : {}),
      ...(input.yolo ? { yolo: true } : {}),
      ...(input.unattended ? { unattended: input.unattended } : {}),
    },
  };
  // Inserted already claimed with its session (p-pgclaimed): only with the session's held INSERT.
  const claimed =
    riding && claimWith && a.runs.createClaimed
      ? await a.runs.createClaimed(newRun, riding, claimWith)
      : undefined;
  const run = claimed?.run ?? (await a.runs.create(newRun, riding));
  const rt = core.runtime(session.id);
  rt.queuedHere = (rt.queuedHere ?? 0) + 1;
  // Not for a run launched already, during its statement's round trip (its model handed then).
  if (input.resolved && !(claimed && rt.runId === run.id)) core.hand(run.id, input.resolved);
  // The queue as published: what a drain right after starts from. A run inserted claimed is
  // published queued then started, as a claim right after would.
  const known = claimed || (created && run.status === 'queued') ? [run] : undefined;
  // A lone start's queue.changed went in its statement (p-pgstart4): not published again.
  const queued = claimed?.announced && known ? known : await core.publishQueue(session.id, known);
  return { run, queued, ...(claimed ? { claimed } : {}) };
}

const position = async (core: AgentCore, sessionId: string, runId: string) =>
  (await core.host.runs.queued(sessionId)).findIndex((r) => r.id === runId) + 1;

/** Whether the durable engine would queue a root run sent now (`DurableRuns.enqueue`). */
function engineQueues(core: AgentCore): boolean {
  const durable = core.deps.durable;
  return durable?.enqueue !== undefined && (durable.queues?.() ?? true);
}

/**
 * `behind`: told the session's id when the run was queued behind a run of this node (its drain
 * here found the session busy). The caller drains again after its transaction's COMMIT
 * (`drainAfterCommit`): a finish between that drain and the COMMIT read the queue without it.
 */
export async function sendNow(
  core: AgentCore,
  input: Parameters<AgentService['send']>[0],
  behind?: (sessionId: string) => void,
): Promise<ReturnType<AgentService['send']>> {
  const a = core.host;
  if (core.closing) throw new SvcError('unavailable', 'svc is shutting down; the prompt was not sent');
  // The caller's copy of the row, read or written in the transaction this send joins.
  const given = input.session && input.session.id === input.sessionId ? input.session : undefined;
  const session = input.sessionId
    ? (given ?? (await a.sessions.require(input.sessionId)))
    : await a.sessions.create({ title: input.title ?? '', ...(input.agent ? { agent: input.agent } : {}) });
  const kind = agentKind(a.config, input.agent ?? session.agent, 'primary');
  if (input.ifBusy === 'refuse') {
    const rt = core.runtime(session.id);
    if (rt.state !== 'idle') {
      throw new SvcError(
        'conflict',
        `session ${session.id} is busy: run ${rt.runId} is ${rt.state}; wait for it or cancel it`,
      );
    }
    const other = await busyElsewhere(a, session.id);
    if (other) {
      throw new SvcError(
        'conflict',
        `session ${session.id} is busy: run ${other.id} is running in another svc process (pid ${other.pid ?? '?'}); wait for it to finish, cancel it (update_agent_run action cancel), or use another session`,
        { details: { run_id: other.id, pid: other.pid } },
      );
    }
  }
  // A session made here or by the caller in this transaction has no other run.
  const created = !input.sessionId || session === given;
  // A session inserted with this run's statement can have no other run: its run goes in claimed,
  // when nothing else would start it (a durable engine's queue) and this runtime would start it now.
  let sent: ClaimAlongside | undefined;
  // Its prompt message in the same statement where the store can (p-pgstart2: the start is one
  // statement), as the run's opening would append it.
  let prompt: HeldPrompt | undefined;
  // Launched during its start's round trip (`sent` below): told the start's answer.
  let early: EarlyLaunch | undefined;
  const claimWith: ClaimedCreate | undefined =
    created && !engineQueues(core) && core.runtime(session.id).state === 'idle' && !core.closing
      ? {
          next: { type: 'phase', payload: promptPhase() },
          alongside: (runId) => (sent = input.claimAlongside?.(runId)),
          trailing: (runId) => {
            prompt = a.sessions.promptInsert?.(promptMessage(session.id, runId, input.prompt));
            // The held session's updated_at its prompt's time, as the append would set it (p-pgstart3).
            if (prompt && given) input.sessionInsert?.stamp?.(prompt.message.created_at);
            return prompt?.inserts;
          },
          // Its session events in the same statement where the bus can (p-pgstart4).
          announce: (row) => (prompt ? startEvents(core, row, session, prompt.message.id) : undefined),
          // Launched as soon as that statement is sent (p-pgoverlap): its preparation during the
          // round trip, its model request after the answer. Not with a durable engine's workflow.
          sent: (row) => {
            const version = a.sessions.messagesVersion?.(session.id);
            const durable = core.deps.durable;
            const workflow = durable !== undefined && (durable.workflows?.() ?? true);
            if (!prompt || version === undefined || workflow || core.closing) return;
            if (input.resolved) core.hand(row.id, input.resolved);
            early = launchEarly(core, row, {
              kind: agentKind(a.config, row.agent),
              session,
              ...(sent ? { alongside: sent } : {}),
              ...(input.transaction ? { transaction: input.transaction } : {}),
              // The history as the statement will leave it (`HeldPrompt.written`), at the version
              // of the session's messages before it: read again if the answer came first.
              prompted: {
                message: prompt.message,
                history: { messages: [{ ...prompt.message }], version },
                session,
                announced: true,
              },
            });
          },
        }
      : undefined;
  let enqueued: Awaited<ReturnType<typeof enqueueRun>>;
  try {
    enqueued = await enqueueRun(core, input, kind, session, created, claimWith);
  } catch (error) {
    early?.abandon(false);
    throw error;
  }
  const { run, queued, claimed } = enqueued;
  core.deferred(run.id);
  if (claimed && early) {
    try {
      prompt?.written();
      await early.answered(claimed);
    } catch (error) {
      // Committed by itself (a lone start): the caller's cancel ends it (p-pgstart3), as below.
      early.abandon(true);
      core.unlaunched.add(run.id);
      throw error;
    }
    return await receipt(core, session.id, run.id);
  }
  if (claimed) {
    try {
      const written = prompt?.written();
      await launchClaimed(core, claimed, {
        kind: agentKind(a.config, run.agent),
        session,
        alongside: sent,
        ...(input.transaction ? { transaction: input.transaction } : {}),
        ...(claimed.announced ? { announced: true } : {}),
        ...(prompt && written
          ? {
              prompted: {
                message: prompt.message,
                history: written,
                session,
                ...(claimed.announced ? { announced: true } : {}),
              },
            }
          : {}),
      });
    } catch (error) {
      // Not launched: a lone start's statement committed by itself (no ROLLBACK removes the run);
      // the caller's cancel ends it (p-pgstart3). One in a transaction with BEGIN rolls back with
      // it: nothing to cancel, nothing kept (p-pgstart4).
      const rt = core.runtime(session.id);
      if (prompt && claimed.alone && (rt.runId !== run.id || !rt.controller)) core.unlaunched.add(run.id);
      throw error;
    }
    return await receipt(core, session.id, run.id);
  }
  const alongside = input.claimAlongside?.(run.id);
  if (core.runtime(session.id).state !== 'idle') behind?.(session.id);
  await drainQueue(core, session.id, queued, session, {
    runId: run.id,
    ...(alongside ? { alongside } : {}),
    ...(input.transaction ? { transaction: input.transaction } : {}),
  });
  return await receipt(core, session.id, run.id);
}

/** What send/enqueue answer: the run, and whether it is running or where it waits in the queue. */
async function receipt(
  core: AgentCore,
  sessionId: string,
  runId: string,
): Promise<Awaited<ReturnType<AgentService['enqueue']>>> {
  // Launched here (claimed, so no longer queued) and not yet over: nothing to read.
  const rt = core.runtime(sessionId);
  const launched = rt.state !== 'idle' && rt.runId === runId;
  const queued = !launched && (await core.host.runs.require(runId)).status === 'queued';
  return {
    session_id: sessionId,
    run_id: runId,
    status: queued ? 'queued' : 'running',
    position: queued ? await position(core, sessionId, runId) : 0,
  };
}

export async function enqueueNow(
  core: AgentCore,
  input: Parameters<AgentService['enqueue']>[0],
  behind?: (sessionId: string) => void,
): Promise<ReturnType<AgentService['enqueue']>> {
  const a = core.host;
  const session = await a.sessions.require(input.sessionId);
  const kind = agentKind(a.config, input.agent ?? session.agent, 'primary');
  const { run, queued } = await enqueueRun(core, input, kind, session);
  core.deferred(run.id);
  if (input.start !== false) {
    if (core.runtime(session.id).state !== 'idle') behind?.(session.id);
    await drainQueue(core, session.id, queued, session);
  }
  return await receipt(core, session.id, run.id);
}

export async function queueStatus(core: AgentCore, sessionId: string): Promise<QueueStatus> {
  const a = core.host;
  await a.sessions.require(sessionId);
  const rt = core.runtime(sessionId);
  const items = await a.runs.queued(sessionId);
  const active = rt.runId ?? (await a.runs.running(sessionId))?.id ?? null;
  return {
    session_id: sessionId,
    state: await stateOf(core, sessionId),
    active_run_id: active,
    length: items.length,
    items: items.map((run) => ({
      run_id: run.id,
      preview: preview(run.prompt),
      agent: run.agent,
      origin: run.origin,
      created_at: run.created_at,
    })),
  };
}

export async function removeQueued(core: AgentCore, runId: string): Promise<AgentRun> {
  const a = core.host;
  const run = await a.runs.require(runId);
  if (run.status !== 'queued') throw new SvcError('conflict', `run ${runId} is ${run.status}, not queued`);
  const updated = await a.runs.update(runId, {
    status: 'cancelled',
    reason: 'removed from the queue',
    finished_at: a.clock.now(),
  });
  await a.runs.append(runId, 'run.finished', { status: 'cancelled', reason: 'removed from the queue' });
  await core.publishQueue(run.session_id);
  await core.settle(runId);
  return updated;
}

/**
 * After the COMMIT of a send or enqueue whose run was queued behind a run of this node: the
 * session's queue drained when that run's finish went idle meanwhile (p-flake). On PostgreSQL the
 * finish's queue read (its statement's `svc_session_has_queued`, or the read after it) and the
 * drain ran between the sender's drain and its COMMIT, without the run: nothing else starts it.
 * Nothing read while the session is still busy here (its finish, after the COMMIT, sees the run).
 */
export async function drainAfterCommit(core: AgentCore, sessionId: string | undefined): Promise<void> {
  if (sessionId === undefined || core.runtime(sessionId).state !== 'idle') return;
  try {
    await drainQueue(core, sessionId);
  } catch (error) {
    core.host.log.warn('queue drain after the send failed', { session_id: sessionId, error });
  }
}
