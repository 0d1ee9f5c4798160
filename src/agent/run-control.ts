/**
 * Run control of the agent service: claim and start a run (its execution through the run loop,
 * the cross-process cancel poll), what follows its finish (the next queued prompt), and the queue
 * drain. The finish itself is ./run-finish.ts, compaction ./run-compaction.ts, sub-agents
 * ./run-child.ts.
 * @module
 */
import { toSvcError } from '../errors';
import type { SessionEventPayloads, SessionEventType } from '../events/types';
import type { AgentRun, ClaimedRow, ClaimResult } from '../runs/run-ledger';
import { runStartedPayload } from '../runs/run-started';
import type { ClaimAlongside } from '../runs/types';
import type { Session } from '../sessions/session-store';
import type { Tx } from '../store/transactions';
import { type AgentKind, agentKind } from './agent-kinds';
import { runFailure } from './failure';
import { withWorkspace } from './host';
import { recordProject } from './project-registry';
import { promptEvents } from './prompt-message';
import { compactDuringRun } from './run-compaction';
import { type FinishNext, finishRun, handedOver } from './run-finish';
import { executeRun, promptPhase, type RunOutcome, type StopState } from './run-loop';
import { claimDequeued, enqueueRun, storedRun } from './run-queue';
import type { RunExecution } from './run-types';
import { type AgentCore, queuePayload, statePayload } from './session-runtime';
import type { StartAnswer } from './start-answer';
import type { ChildRunInput, StartHooks } from './types';

const CANCEL_POLL_MS = 1000;
const NO_USAGE = { input_tokens: 0, output_tokens: 0, reasoning_tokens: 0, cached_input_tokens: 0 };

/** Claim and start the run; false when another live process runs the session. */
export async function startRun(
  core: AgentCore,
  run: AgentRun,
  options: {
    subagent?: boolean;
    kind: AgentKind;
    workspace?: ChildRunInput['workspace'];
    /** The session's queued runs as the caller just read them, this run among them. */
    queued?: AgentRun[];
    /** The session's row as the caller read it in the transaction this start is part of. */
    session?: Session;
    /** The sender's hooks of the run it sent (`SendInput.claimAlongside`). */
    start?: StartHooks;
  },
): Promise<boolean> {
  const queue = !options.subagent && !options.workspace;
  if (queue && (await enqueueRun(core, run, (sessionId) => drainQueue(core, sessionId)))) return true;
  // The run's first event after run.started (its prompt phase, ./run-loop.ts `openRun`) goes with
  // the claim where the ledger can (PostgreSQL: one statement, one round trip less). A start that
  // fails before the run opens then leaves that phase without the prompt, as a crash between the
  // two appends could before.
  const next = { type: 'phase', payload: promptPhase() };
  // The sender's hooks apply to its own run only (the queue's head may be an earlier one).
  const own = options.start?.runId === run.id ? options.start : undefined;
  const alongside = own?.alongside ? { alongside: own.alongside } : {};
  const claim = await core.host.runs.claim(run.id, { started: true, next, ...alongside });
  if (!claim.ok) return false;
  // One literal of every launch option, not `{ ...options, more }` (a new V8 map a call on Node 20,
  // p-sqlprofile; COMPAT-PERF-300): an option not given is undefined, as launchRun reads it.
  await launchRun(core, claim.run, {
    subagent: options.subagent,
    kind: options.kind,
    workspace: options.workspace,
    dequeued: undefined,
    rest: options.queued?.filter((r) => r.id !== run.id),
    session: options.session,
    started: claim.started !== undefined,
    phased: claim.next !== undefined,
    opened: claim.alongside && own?.alongside?.opened ? openedOnce(own.alongside) : undefined,
    prompted: undefined,
    announced: undefined,
    // Every run the sender's body launches gets its token (an earlier queued one too): its writes
    // while the body is open join it, as they did through the async scope (p-txcheck).
    transaction: options.start?.transaction,
  });
  return true;
}

/**
 * Start a run inserted already claimed with its new session (`RunLedger.createClaimed`): as
 * `startRun` after its claim, run.started and the prompt phase written, the queue left empty.
 */
export async function launchClaimed(
  core: AgentCore,
  claim: Extract<ClaimResult, { ok: true }>,
  options: {
    kind: AgentKind;
    session?: Session;
    alongside?: ClaimAlongside;
    /** Its prompt message written with it (p-pgstart2, `RunExecution.prompted`). */
    prompted?: RunExecution['prompted'];
    /** Its start's session events went in its statement (p-pgstart4, `startEvents`): not published. */
    announced?: boolean;
    /** The sender's transaction body (`RunExecution.transaction`). */
    transaction?: Tx;
  },
): Promise<void> {
  const alongside = options.alongside;
  // One literal, as startRun's (COMPAT-PERF-300).
  await launchRun(core, claim.run, {
    subagent: undefined,
    kind: options.kind,
    workspace: undefined,
    dequeued: undefined,
    rest: [],
    session: options.session,
    started: true,
    phased: true,
    opened: claim.alongside && alongside?.opened ? openedOnce(alongside) : undefined,
    prompted: options.prompted,
    announced: options.announced,
    transaction: options.transaction,
  });
}

/** `run.started`'s session event: the run's model, else its session's, its kind's, the config's. */
function runStartedEvent(
  a: AgentCore['host'],
  run: ClaimedRow,
  session: Session | undefined,
  kind: AgentKind,
): SessionEventPayloads['run.started'] {
  return {
    session_id: run.session_id,
    run_id: run.id,
    parent_run_id: run.parent_run_id,
    family_session_id: run.family_session_id,
    agent: run.agent,
    model: run.model ?? session?.model ?? kind.model ?? a.config.models.large ?? '',
    origin: run.origin,
  };
}

/**
 * A lone start's session events (p-pgstart4, `ClaimedCreate.announce`), as `enqueueRun`
 * (../prompt-queue.ts), `launchRun` and `openRun` publish them, in that order: the queue with the
 * run, the state `running`, the queue empty, `run.started`, the prompt's message.created and
 * message.completed. The kind is the one `launchClaimed`'s caller gives (the run's agent's).
 */
export function startEvents(
  core: AgentCore,
  run: ClaimedRow,
  session: Session,
  messageId: string,
): { type: SessionEventType; payload: Record<string, unknown> }[] {
  const a = core.host;
  const sessionId = run.session_id;
  return [
    { type: 'queue.changed', payload: queuePayload(sessionId, [run]) },
    { type: 'state.changed', payload: statePayload(sessionId, 'running', run.id) },
    { type: 'queue.changed', payload: queuePayload(sessionId, []) },
    { type: 'run.started', payload: runStartedEvent(a, run, session, agentKind(a.config, run.agent)) },
    ...promptEvents(sessionId, messageId, run.id),
  ];
}

/**
 * The sender's `opened`, told once: by the run's opening, or by its end when it ended before.
 * Only for a run whose claim wrote the sender's insert (the sender waits for its prompt message then).
 */
export function openedOnce(alongside: ClaimAlongside): () => void {
  let told = false;
  return () => {
    if (told) return;
    told = true;
    alongside.opened?.();
  };
}

/**
 * Run here a run the durable engine gave this node: a queued run dequeued here, or one whose node
 * died (on the node that took it over): the run is this node's from now on, its execution goes on
 * from its first unfinished step (./run-resume.ts), and it finishes here. Undefined when the run
 * is not queued or running any more.
 */
export async function resumeRun(core: AgentCore, runId: string): Promise<RunOutcome | undefined> {
  const a = core.host;
  const stored = await storedRun(core, runId);
  if (stored?.status === 'queued') {
    // Dequeued here (./run-queue.ts): claimed now and run from its prompt, as on any start.
    const dequeued = await claimDequeued(core, stored);
    if (!dequeued) return undefined;
    const { claimed, workspace } = dequeued;
    return await runHere(core, claimed, {
      kind: agentKind(a.config, claimed.agent),
      workspace,
      dequeued: true,
      started: dequeued.started,
    });
  }
  // takeOver reads the run and answers undefined unless it is still running.
  const taken = await a.runs.takeOver?.(runId);
  if (!taken) {
    // It completed on a node that died before its workflow ended (the workflow was put back on
    // the queue): that node may not have started the session's next queued prompt; it starts now.
    if (stored?.status === 'completed' && !stored.parent_run_id) await drainOutside(core, stored.session_id);
    return undefined;
  }
  return await runHere(core, taken, {
    kind: agentKind(a.config, taken.agent),
    subagent: Boolean(taken.parent_run_id),
  });
}

/** Launch the run here and wait for its end; its outcome. */
async function runHere(
  core: AgentCore,
  run: AgentRun,
  options: Parameters<typeof launchRun>[2],
): Promise<RunOutcome | undefined> {
  let outcome: RunOutcome | undefined;
  await launchRun(core, run, options, (result) => {
    outcome = result;
  });
  await core.runtime(run.session_id).promise;
  return outcome;
}

/** The run's execution and its finish, on this node (a claimed run, or one resumed here). */
export async function launchRun(
  core: AgentCore,
  claimed: AgentRun,
  options: {
    subagent?: boolean;
    kind: AgentKind;
    workspace?: ChildRunInput['workspace'];
    /** Dequeued here from the durable engine's queue: a fresh start inside its workflow. */
    dequeued?: boolean;
    /** The session's queue without this run, as read just before its claim: published, not read again. */
    rest?: AgentRun[];
    /** The session's row as read in the transaction of the claim: not read again. */
    session?: Session;
    /** Its ledger's run.started was written with the claim: not appended again. */
    started?: boolean;
    /** Its prompt phase was written with the claim too. */
    phased?: boolean;
    /** Told once its prompt message is written (`RunExecution.opened`), or the run ended before. */
    opened?: () => void;
    /** Its prompt message written with its INSERT (`RunExecution.prompted`). */
    prompted?: RunExecution['prompted'];
    /** Its state.changed, queue.changed and run.started went in its INSERT's statement (`startEvents`). */
    announced?: boolean;
    /** The sender's transaction body (`RunExecution.transaction`). */
    transaction?: Tx;
    /** Launched before its INSERT's answer (`launchEarly`): `RunExecution.answered`. */
    answered?: StartAnswer;
  },
  resumed?: (outcome: RunOutcome) => void,
): Promise<void> {
  const a = core.host;
  const sessionId = claimed.session_id;
  const controller = new AbortController();
  const stop: StopState = {};
  const rt = core.runtime(sessionId);
  rt.controller = controller;
  rt.stop = stop;
  core.setState(sessionId, 'running', claimed.id, options.announced);
  if (!options.announced) await core.publishQueue(sessionId, options.rest);
  core.deferred(claimed.id);
  const session = options.session ?? (await a.sessions.get(sessionId));
  if (!options.announced)
    core.publish(sessionId, 'run.started', runStartedEvent(a, claimed, session, options.kind));
  // SQLite: appended at the call, no promise (p-syncrepo).
  if (!options.started && !a.runs.appendNow?.(claimed.id, 'run.started', runStartedPayload(claimed)))
    await a.runs.append(claimed.id, 'run.started', runStartedPayload(claimed));
  a.log.info('run started', {
    run_id: claimed.id,
    session_id: sessionId,
    origin: claimed.origin,
    agent: claimed.agent,
    ...(claimed.parent_run_id ? { parent_run_id: claimed.parent_run_id } : {}),
  });
  // Launched before its start's answer: counted once the start answered (`launchEarly`).
  if (!options.subagent && !options.answered) recordProject(a);
  const poll = pollCancel(core, claimed, controller, stop);
  const resume = resumed !== undefined && !options.dequeued;
  const runApp = options.workspace ? withWorkspace(a, options.workspace.root) : a;
  const handed = core.takeHanded(claimed.id);
  core.deps.runLeases?.begin(claimed, runApp.workspace, controller.signal);
  const execute = () =>
    executeRun({
      app: runApp,
      toolbox: core.deps.toolbox(options.workspace),
      run: claimed,
      kind: options.kind,
      controller,
      stop,
      subagent: options.subagent ?? false,
      compact: (compactOptions) =>
        compactDuringRun(core, sessionId, claimed.id, controller.signal, compactOptions),
      takeCompactionRequest: () => {
        const requested = rt.compactRequested;
        rt.compactRequested = undefined;
        return requested;
      },
      resume,
      handed: resume ? undefined : handed,
      transaction: resume ? undefined : options.transaction,
      // No durable engine: the finish follows the body here, no workflow's end between them, so
      // it can carry the last step end (./last-step-end.ts).
      lastEnds: core.deps.durable && (core.deps.durable.workflows?.() ?? true) ? undefined : core.lastEnds,
      phased: options.phased,
      opened: options.opened,
      prompted: options.prompted,
      answered: options.answered,
    });
  // A root run started here runs as the durable engine's workflow (one resumed here already is).
  const durable = !resume && !options.dequeued && !options.subagent ? core.deps.durable : undefined;
  const body = () => a.telemetry.run(claimed, execute);
  rt.promise = (durable ? durable.execute(claimed.id, body) : body())
    .catch(
      (error): RunOutcome => ({
        status: 'failed',
        reason: 'error',
        error: a.redactor.string(toSvcError(error).message),
        failure: a.redactor.value(
          runFailure('run_error', { model: claimed.model, message: toSvcError(error).message }),
        ),
        steps: 0,
        usage: { ...NO_USAGE },
        cost: 0,
        model: claimed.model,
        result_message_id: null,
      }),
    )
    .then(async (outcome) => {
      // Its start failed (`launchEarly`): nothing of it written, its runtime reset by its launcher.
      if (options.answered?.ok === false) {
        clearInterval(poll);
        return;
      }
      options.opened?.();
      clearInterval(poll);
      resumed?.(outcome);
      if (stop.handedOver) return handedOver(core, claimed, outcome);
      // The finish is one commit; the waiters, the next queued prompt and the idle waiters go on
      // after it, so whatever they wake reads the run finished (on PostgreSQL another connection).
      // On PostgreSQL the row and `run.finished` are one statement, its own commit: no BEGIN and
      // COMMIT around it (`together`); a lease it gives up is a write of its own after it, as an
      // expired lease frees itself anyway. No async scope on SQLite (`togetherWith`, p-txtoken):
      // nothing under the finish opens a transaction body of its own to join it.
      // SQLite, inside the open batch: no savepoint (`batchedWith`, p-savepoint), for nothing a
      // ROLLBACK TO could undo. `finishRun` writes (the row, `run.finished`, the compat row's end)
      // only inside its `try`, whose `catch` logs and goes on: a failed write there ends the body
      // without a throw, RELEASE kept what it wrote. Before that `try` it awaits the held step end
      // (`LastEnds.take`, nothing written yet); after it, the lease's end (PostgreSQL only), in-memory
      // state and bus publishes, which never throw (a failed event write goes to the bus's
      // `onError`). COMPAT-PERF-497, 498.
      const next = await core.host.store.transactions.batchedWith(() => finishRun(core, claimed, outcome));
      // A run the durable engine gave this node (dequeued, or resumed after its node died) starts
      // the session's next queued prompt outside its workflow, onto the queue (so it starts even
      // when the node it was sent to is gone; that node, if alive, finds it already queued).
      await afterFinish(core, claimed, next, resume || options.dequeued === true);
    })
    .catch((error: unknown) => {
      // Nobody awaits this chain: a store lost at the run's end (the lease's release, the result's
      // read) is logged, never an unhandled rejection that ends the node.
      a.log.error('run end failed', { run_id: claimed.id, session_id: sessionId, error });
    });
}

/** A cancel asked through the ledger by another process (update_agent_run there). */
function pollCancel(core: AgentCore, run: AgentRun, controller: AbortController, stop: StopState) {
  let checking = false;
  const poll = setInterval(() => {
    if (checking || controller.signal.aborted) return;
    checking = true;
    core.host.runs
      .cancelRequested(run.id)
      .then((requested) => {
        if (!requested || controller.signal.aborted) return;
        stop.status ??= 'cancelled';
        stop.reason ??= 'cancelled (requested through the run ledger)';
        stop.release?.();
        core.setState(run.session_id, 'cancelling', run.id);
        controller.abort(new Error('cancelled'));
      })
      .catch(() => {
        // database closing: the run ends with the app
      })
      .finally(() => {
        checking = false;
      });
  }, CANCEL_POLL_MS);
  poll.unref();
  return poll;
}

/** After the finish is committed: the adaptive monitor, the run's waiters, the queue, the idle waiters. */
async function afterFinish(
  core: AgentCore,
  run: AgentRun,
  { drains, queue }: FinishNext,
  inWorkflow: boolean,
): Promise<void> {
  const a = core.host;
  const sessionId = run.session_id;
  const rt = core.runtime(sessionId);
  // The adaptive monitor handles run.finished and the idle state before the waiters go on.
  try {
    await a.adaptive?.settled();
    try {
      await core.settle(run.id);
    } catch (error) {
      // The result could not be read (the store lost): its waiters read the row when it is back.
      a.log.warn('run result read failed', { run_id: run.id, error });
    }
    if (drains) {
      try {
        // `queue`: as the finish's statement read it (empty), not read again.
        if (await (inWorkflow ? drainOutside(core, sessionId, queue) : drainQueue(core, sessionId, queue)))
          return;
      } catch (error) {
        a.log.warn('queue drain failed', { session_id: sessionId, error });
      }
    }
  } finally {
    rt.draining = false;
  }
  core.notifyIdle(sessionId);
}

/**
 * `drainQueue` outside the durable engine's workflow this code runs in (a run the engine gave this
 * node): the next prompt is queued, never run inside the ended run's workflow.
 */
async function drainOutside(
  core: AgentCore,
  sessionId: string,
  queue?: AgentRun[],
): Promise<string | undefined> {
  const outside = core.deps.durable?.outside;
  const drain = () => drainQueue(core, sessionId, queue);
  return outside ? await outside(drain) : await drain();
}

/**
 * Start the session's next queued prompt when it is idle; the run id, or undefined. `queued` and
 * `session`: its queued runs and its row as the caller just read them in this transaction.
 */
export async function drainQueue(
  core: AgentCore,
  sessionId: string,
  queued?: AgentRun[],
  session?: Session,
  start?: StartHooks,
): Promise<string | undefined> {
  const rt = core.runtime(sessionId);
  if (rt.state !== 'idle' || core.closing) return undefined;
  const list = queued ?? (await core.host.runs.queued(sessionId));
  const next = list[0];
  if (!next) return undefined;
  const kind = agentKind(core.host.config, next.agent);
  return (await startRun(core, next, { kind, queued: list, session, ...(start ? { start } : {}) }))
    ? next.id
    : undefined;
}
