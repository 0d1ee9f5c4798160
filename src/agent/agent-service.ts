/**
 * The agent service: the one session API (`app.agent`, see ./types.ts) over the run loop.
 *
 * Per session, an explicit state machine: idle → running → idle, with cancelling (a cancel is
 * on its way) and compacting (summarizing older turns, between steps or on demand). The prompt
 * queue of a session is its `queued` runs in the ledger (FIFO, durable, visible to every
 * process). A prompt sent while a run is active joins the queue; after a run completes the next
 * queued prompt starts. After a failed or cancelled run the queue waits for the next send (or
 * `drain`) instead of feeding more prompts into a broken state.
 *
 * Only one run per session runs at a time, across processes too: a run is claimed in a database
 * transaction that refuses while another live process runs one in the same session.
 * @module
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { SvcError, toSvcError } from '../errors';
import type { SessionEvent } from '../events/bus';
import type { SessionEventPayloads, SessionEventType } from '../events/types';
import type { AgentRun, FinalRunStatus } from '../runs/run-ledger';
import { atomically as inTransaction } from '../store/db';
import { type AgentKind, agentKind, agentKinds } from './agent-kinds';
import { createAgentStateStore } from './agent-state-store';
import { compactHistory } from './compaction';
import type { AgentDeps } from './deps';
import { runFailure } from './failure';
import { textOf } from './history';
import { createAgentHost, withWorkspace } from './host';
import { recordProject } from './project-registry';
import { refusedCall } from './refused';
import { executeRun, type RunOutcome, type StopState } from './run-loop';
import type {
  AgentService,
  ChildRunInput,
  CompactionResult,
  PromptSection,
  QueueStatus,
  RunResult,
  SendInput,
  SessionRuntimeStatus,
  SessionState,
} from './types';

interface Runtime {
  state: SessionState;
  runId: string | null;
  /** A compaction asked for during the active run (requestCompaction), with its reason. */
  compactRequested?: 'manual' | 'health_followon';
  controller?: AbortController;
  stop?: StopState;
  promise?: Promise<void>;
  idleWaiters: Set<() => void>;
}

interface Deferred {
  promise: Promise<RunResult>;
  resolve(result: RunResult): void;
}

const CANCEL_POLL_MS = 1000;
const WAIT_POLL_MS = 200;
const CLOSE_TIMEOUT_MS = 5000;

export function createAgentService(deps: AgentDeps): AgentService {
  const runtimes = new Map<string, Runtime>();
  const deferreds = new Map<string, Deferred>();
  let closing = false;

  /** The sections other domains add to the system prompt (addPromptSection), in order. */
  const promptSections: PromptSection[] = [];
  const host = createAgentHost(deps, promptSections);
  const app = () => host;
  const state = createAgentStateStore(deps.db);
  const runtime = (sessionId: string): Runtime => {
    let rt = runtimes.get(sessionId);
    if (!rt) {
      rt = { state: 'idle', runId: null, idleWaiters: new Set() };
      runtimes.set(sessionId, rt);
    }
    return rt;
  };
  /**
   * The synchronous writes of one step of the service (enqueue, claim and the start of the run up
   * to its first await; or a run's finish) in one SQLite transaction: one commit, made before
   * control returns to the caller, so the ledger rows are durable at the same points as before.
   */
  const atomically = <T>(fn: () => T): T => inTransaction(() => app().db, fn);

  const publish = <T extends SessionEventType>(
    sessionId: string,
    type: T,
    payload: SessionEventPayloads[T],
  ) => app().bus.publish(sessionId, type, payload);

  const setState = (sessionId: string, state: SessionState, runId: string | null) => {
    const rt = runtime(sessionId);
    if (rt.state === state && rt.runId === runId) return;
    rt.state = state;
    rt.runId = runId;
    publish(sessionId, 'state.changed', {
      session_id: sessionId,
      state,
      ...(runId ? { run_id: runId } : {}),
    });
  };

  const deferred = (runId: string): Deferred => {
    let d = deferreds.get(runId);
    if (!d) {
      let resolve!: (result: RunResult) => void;
      const promise = new Promise<RunResult>((r) => {
        resolve = r;
      });
      d = { promise, resolve };
      deferreds.set(runId, d);
    }
    return d;
  };
  const settle = (runId: string) => {
    const d = deferreds.get(runId);
    if (!d) return;
    deferreds.delete(runId);
    d.resolve(result(runId));
  };

  const publishQueue = (sessionId: string) => {
    const items = app().runs.queued(sessionId);
    publish(sessionId, 'queue.changed', {
      session_id: sessionId,
      length: items.length,
      items: items.map((run) => ({ id: run.id, preview: preview(run.prompt) })),
    });
  };

  const notifyIdle = (sessionId: string) => {
    const rt = runtime(sessionId);
    if (rt.state !== 'idle') return;
    for (const waiter of [...rt.idleWaiters]) waiter();
  };

  function result(runId: string): RunResult {
    const run = app().runs.require(runId);
    const message = run.result_message_id ? app().sessions.getMessage(run.result_message_id) : undefined;
    return {
      run_id: run.id,
      session_id: run.session_id,
      parent_run_id: run.parent_run_id,
      family_session_id: run.family_session_id,
      status: run.status,
      reason: run.reason,
      error: run.error,
      failure: run.failure,
      refused: run.status === 'completed' ? refusedCall(app().runs, run.id) : null,
      text: message ? textOf(message.parts) : '',
      steps: run.steps,
      usage: run.usage,
      cost: run.cost,
      model: run.model,
      agent: run.agent,
      started_at: run.started_at,
      finished_at: run.finished_at,
      duration_ms:
        run.started_at !== null && run.finished_at !== null ? run.finished_at - run.started_at : null,
    };
  }

  const busyElsewhere = (sessionId: string): AgentRun | undefined => {
    const running = app().runs.running(sessionId);
    if (!running || running.runner === app().runs.owner.runner) return undefined;
    return app().runs.ownerAlive(running) ? running : undefined;
  };

  /** Claim and start the run; false when another live process runs the session. */
  function start(
    run: AgentRun,
    options: { subagent?: boolean; kind: AgentKind; workspace?: ChildRunInput['workspace'] },
  ): boolean {
    const a = app();
    const claim = a.runs.claim(run.id);
    if (!claim.ok) return false;
    const claimed = claim.run;
    const sessionId = claimed.session_id;
    const controller = new AbortController();
    const stop: StopState = {};
    const rt = runtime(sessionId);
    rt.controller = controller;
    rt.stop = stop;
    setState(sessionId, 'running', claimed.id);
    publishQueue(sessionId);
    deferred(claimed.id);
    const session = a.sessions.get(sessionId);
    publish(sessionId, 'run.started', {
      session_id: sessionId,
      run_id: claimed.id,
      parent_run_id: claimed.parent_run_id,
      family_session_id: claimed.family_session_id,
      agent: claimed.agent,
      model: claimed.model ?? session?.model ?? options.kind.model ?? a.config.models.large ?? '',
      origin: claimed.origin,
    });
    a.runs.append(claimed.id, 'run.started', {
      agent: claimed.agent,
      origin: claimed.origin,
      pid: claimed.pid,
      options: claimed.options,
    });
    a.log.info('run started', {
      run_id: claimed.id,
      session_id: sessionId,
      origin: claimed.origin,
      agent: claimed.agent,
      ...(claimed.parent_run_id ? { parent_run_id: claimed.parent_run_id } : {}),
    });
    if (!options.subagent) recordProject(a);
    // A cancel asked through the ledger by another process (update_agent_run there).
    const poll = setInterval(() => {
      try {
        if (!controller.signal.aborted && a.runs.cancelRequested(claimed.id)) {
          stop.status ??= 'cancelled';
          stop.reason ??= 'cancelled (requested through the run ledger)';
          setState(sessionId, 'cancelling', claimed.id);
          controller.abort(new Error('cancelled'));
        }
      } catch {
        // database closing: the run ends with the app
      }
    }, CANCEL_POLL_MS);
    poll.unref();
    const runApp = options.workspace ? withWorkspace(a, options.workspace.root) : a;
    const execute = () =>
      executeRun({
        app: runApp,
        toolbox: deps.toolbox(options.workspace),
        run: claimed,
        kind: options.kind,
        controller,
        stop,
        subagent: options.subagent ?? false,
        compact: (compactOptions) =>
          compactDuringRun(sessionId, claimed.id, controller.signal, compactOptions),
        takeCompactionRequest: () => {
          const requested = rt.compactRequested;
          rt.compactRequested = undefined;
          return requested;
        },
      });
    rt.promise = a.telemetry
      .run(claimed, execute)
      .catch(
        (error): RunOutcome => ({
          status: 'failed',
          reason: 'error',
          error: a.redactor.string(toSvcError(error).message),
          failure: a.redactor.value(
            runFailure('run_error', { model: claimed.model, message: toSvcError(error).message }),
          ),
          steps: 0,
          usage: { input_tokens: 0, output_tokens: 0, reasoning_tokens: 0, cached_input_tokens: 0 },
          cost: 0,
          model: claimed.model,
          result_message_id: null,
        }),
      )
      .then((outcome) => {
        clearInterval(poll);
        finish(claimed, outcome);
      });
    return true;
  }

  function finish(run: AgentRun, outcome: RunOutcome) {
    atomically(() => finishRun(run, outcome));
  }

  function finishRun(run: AgentRun, outcome: RunOutcome) {
    const a = app();
    const sessionId = run.session_id;
    try {
      a.runs.update(run.id, {
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
      });
      a.runs.append(run.id, 'run.finished', {
        status: outcome.status,
        reason: outcome.reason,
        ...(outcome.failure ? { failure: outcome.failure } : {}),
        steps: outcome.steps,
        usage: outcome.usage,
        cost: outcome.cost,
      });
      publish(sessionId, 'run.finished', {
        session_id: sessionId,
        run_id: run.id,
        status: outcome.status,
        ...(outcome.reason ? { reason: outcome.reason } : {}),
        ...(outcome.failure ? { failure: outcome.failure } : {}),
        steps: outcome.steps,
        usage: { input_tokens: outcome.usage.input_tokens, output_tokens: outcome.usage.output_tokens },
        cost: outcome.cost,
      });
      a.log.info('run finished', {
        run_id: run.id,
        session_id: sessionId,
        status: outcome.status,
        ...(outcome.reason ? { reason: outcome.reason } : {}),
        ...(outcome.failure ? { code: outcome.failure.code } : {}),
        steps: outcome.steps,
        model: outcome.model,
      });
    } catch (error) {
      a.log.error('run finalize failed', { run_id: run.id, error });
    }
    const rt = runtime(sessionId);
    rt.controller = undefined;
    rt.stop = undefined;
    rt.promise = undefined;
    // A request the run did not reach a step boundary for ends with it (it was for this run).
    rt.compactRequested = undefined;
    setState(sessionId, 'idle', null);
    settle(run.id);
    if (outcome.status === 'completed' && !closing && !run.parent_run_id) {
      try {
        if (drain(sessionId)) return;
      } catch (error) {
        a.log.warn('queue drain failed', { session_id: sessionId, error });
      }
    }
    notifyIdle(sessionId);
  }

  async function compactDuringRun(
    sessionId: string,
    runId: string,
    signal: AbortSignal,
    options: { keepFromMessageId?: string; reason?: 'auto' | 'manual' | 'health_followon' },
  ) {
    const a = app();
    setState(sessionId, 'compacting', runId);
    publish(sessionId, 'compaction.started', {
      session_id: sessionId,
      run_id: runId,
      reason: options.reason ?? 'auto',
    });
    a.runs.append(runId, 'phase', { phase: 'compaction' });
    try {
      const outcome = await compactHistory(a, {
        sessionId,
        runId,
        signal,
        keepFromMessageId: options.keepFromMessageId,
      });
      publish(sessionId, 'compaction.finished', {
        session_id: sessionId,
        summary_message_id: outcome.summary_message_id,
        tokens_before: outcome.tokens_before,
        tokens_after: outcome.tokens_after,
      });
      a.runs.append(runId, 'compaction.finished', { ...outcome });
    } catch (error) {
      if (signal.aborted) throw error;
      // A failed summary must not fail the run: it goes on with the full history.
      const e = toSvcError(error);
      a.log.warn('auto-compaction failed', { session_id: sessionId, error: e.message });
      a.runs.append(runId, 'compaction.failed', { code: e.code, message: a.redactor.string(e.message) });
    } finally {
      if (runtime(sessionId).state === 'compacting') setState(sessionId, 'running', runId);
    }
  }

  function drain(sessionId: string): string | undefined {
    const rt = runtime(sessionId);
    if (rt.state !== 'idle' || closing) return undefined;
    const next = app().runs.queued(sessionId)[0];
    if (!next) return undefined;
    const kind = agentKind(app().config, next.agent);
    return start(next, { kind }) ? next.id : undefined;
  }

  function enqueueRun(input: SendInput & { sessionId: string }, kind: AgentKind): AgentRun {
    const a = app();
    const session = a.sessions.require(input.sessionId);
    if (!input.prompt.trim()) throw new SvcError('invalid_input', 'prompt: must not be empty');
    if (input.maxSteps !== undefined && (!Number.isInteger(input.maxSteps) || input.maxSteps < 1)) {
      throw new SvcError('invalid_input', `max_steps: must be a positive integer, got ${input.maxSteps}`);
    }
    const run = a.runs.create({
      session_id: session.id,
      family_session_id: a.sessions.root(session.id),
      agent: kind.id,
      model: input.model ?? null,
      origin: input.origin ?? 'api',
      prompt: input.prompt,
      options: {
        ...(input.maxSteps !== undefined ? { max_steps: input.maxSteps } : {}),
        ...(input.yolo ? { yolo: true } : {}),
        ...(input.unattended ? { unattended: input.unattended } : {}),
      },
    });
    publishQueue(session.id);
    return run;
  }

  const position = (sessionId: string, runId: string) =>
    app()
      .runs.queued(sessionId)
      .findIndex((r) => r.id === runId) + 1;

  function sendNow(input: Parameters<AgentService['send']>[0]): ReturnType<AgentService['send']> {
    const a = app();
    if (closing) throw new SvcError('unavailable', 'svc is shutting down; the prompt was not sent');
    const session = input.sessionId
      ? a.sessions.require(input.sessionId)
      : a.sessions.create({ title: input.title ?? '', ...(input.agent ? { agent: input.agent } : {}) });
    const kind = agentKind(a.config, input.agent ?? session.agent, 'primary');
    if (input.ifBusy === 'refuse') {
      const rt = runtime(session.id);
      if (rt.state !== 'idle') {
        throw new SvcError(
          'conflict',
          `session ${session.id} is busy: run ${rt.runId} is ${rt.state}; wait for it or cancel it`,
        );
      }
      const other = busyElsewhere(session.id);
      if (other) {
        throw new SvcError(
          'conflict',
          `session ${session.id} is busy: run ${other.id} is running in another svc process (pid ${other.pid ?? '?'}); wait for it to finish, cancel it (update_agent_run action cancel), or use another session`,
          { details: { run_id: other.id, pid: other.pid } },
        );
      }
    }
    const run = enqueueRun({ ...input, sessionId: session.id }, kind);
    deferred(run.id);
    drain(session.id);
    return receipt(session.id, run.id);
  }

  /** What send/enqueue answer: the run, and whether it is running or where it waits in the queue. */
  function receipt(sessionId: string, runId: string): ReturnType<AgentService['enqueue']> {
    const queued = app().runs.require(runId).status === 'queued';
    return {
      session_id: sessionId,
      run_id: runId,
      status: queued ? 'queued' : 'running',
      position: queued ? position(sessionId, runId) : 0,
    };
  }

  function enqueueNow(input: Parameters<AgentService['enqueue']>[0]): ReturnType<AgentService['enqueue']> {
    const a = app();
    const session = a.sessions.require(input.sessionId);
    const kind = agentKind(a.config, input.agent ?? session.agent, 'primary');
    const run = enqueueRun(input, kind);
    deferred(run.id);
    if (input.start !== false) drain(session.id);
    return receipt(session.id, run.id);
  }

  const service: AgentService = {
    createSession(input) {
      return app().sessions.create(input);
    },
    send(input) {
      return atomically(() => sendNow(input));
    },
    async run(input) {
      const sent = service.send(input);
      const onAbort = () => {
        try {
          service.cancelRun(sent.run_id, 'cancelled by the caller');
        } catch {
          // already over
        }
      };
      input.signal?.addEventListener('abort', onAbort, { once: true });
      try {
        return await service.wait(sent.run_id);
      } finally {
        input.signal?.removeEventListener('abort', onAbort);
      }
    },
    enqueue(input) {
      return atomically(() => enqueueNow(input));
    },
    drain(sessionId) {
      app().sessions.require(sessionId);
      return drain(sessionId);
    },
    queue(sessionId): QueueStatus {
      app().sessions.require(sessionId);
      const rt = runtime(sessionId);
      const items = app().runs.queued(sessionId);
      const active = rt.runId ?? app().runs.running(sessionId)?.id ?? null;
      return {
        session_id: sessionId,
        state: stateOf(sessionId),
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
    },
    removeQueued(runId) {
      const a = app();
      const run = a.runs.require(runId);
      if (run.status !== 'queued')
        throw new SvcError('conflict', `run ${runId} is ${run.status}, not queued`);
      const updated = a.runs.update(runId, {
        status: 'cancelled',
        reason: 'removed from the queue',
        finished_at: a.clock.now(),
      });
      a.runs.append(runId, 'run.finished', { status: 'cancelled', reason: 'removed from the queue' });
      publishQueue(run.session_id);
      settle(runId);
      return updated;
    },
    state(sessionId): SessionRuntimeStatus {
      app().sessions.require(sessionId);
      const rt = runtime(sessionId);
      const other = busyElsewhere(sessionId);
      return {
        session_id: sessionId,
        state: stateOf(sessionId),
        run_id: rt.runId,
        busy_elsewhere: other
          ? { run_id: other.id, pid: other.pid, host: other.host, started_at: other.started_at }
          : null,
        queue_length: app().runs.queued(sessionId).length,
      };
    },
    cancel(sessionId, options = {}) {
      const a = app();
      a.sessions.require(sessionId);
      const rt = runtime(sessionId);
      let cancelled: string | null = null;
      if (rt.runId && rt.controller) {
        cancelled = rt.runId;
        abortRun(sessionId, options.reason ?? 'cancelled by the operator');
      } else {
        const other = busyElsewhere(sessionId);
        if (other) {
          a.runs.requestCancel(other.id);
          a.runs.append(other.id, 'run.cancel_requested', {
            reason: options.reason ?? 'cancelled by the operator',
          });
          cancelled = other.id;
        }
      }
      const cleared: string[] = [];
      if (options.clearQueue) {
        for (const run of a.runs.queued(sessionId)) {
          service.removeQueued(run.id);
          cleared.push(run.id);
        }
      }
      return { cancelled_run_id: cancelled, cleared };
    },
    cancelRun(runId, reason = 'cancelled by the operator') {
      const a = app();
      const run = a.runs.require(runId);
      if (run.status === 'queued') return service.removeQueued(runId);
      if (run.status !== 'running') {
        throw new SvcError(
          'conflict',
          `run ${runId} is ${run.status}; only queued or running runs can be cancelled`,
        );
      }
      const rt = runtime(run.session_id);
      if (rt.runId === runId && rt.controller) {
        abortRun(run.session_id, reason);
      } else if (a.runs.ownerAlive(run)) {
        a.runs.requestCancel(runId);
        a.runs.append(runId, 'run.cancel_requested', { reason });
      } else {
        a.runs.recover();
      }
      return a.runs.require(runId);
    },
    async wait(runId, options = {}) {
      const a = app();
      let run = a.runs.require(runId);
      const d = deferreds.get(runId);
      if (d && (run.status === 'queued' || run.status === 'running')) {
        if (!options.signal) return d.promise;
        return abortable(d.promise, options.signal);
      }
      while (run.status === 'queued' || run.status === 'running') {
        await sleep(WAIT_POLL_MS, undefined, { signal: options.signal });
        if (run.status === 'running' && !a.runs.ownerAlive(run)) a.runs.recover();
        run = a.runs.require(runId);
      }
      return result(runId);
    },
    async waitIdle(sessionId, options = {}) {
      const rt = runtime(sessionId);
      if (rt.state === 'idle') return;
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
    },
    result,
    subscribe(sessionId, listener, options = {}) {
      const a = app();
      const members = new Set(options.family ? a.sessions.family(sessionId).map((s) => s.id) : [sessionId]);
      if (members.size === 0) members.add(sessionId);
      let buffer: SessionEvent[] | undefined = [];
      const accept = (event: SessionEvent) => {
        if (options.family && event.type === 'session.created') {
          const parent = (event.payload as { parent_id?: string | null }).parent_id;
          if (parent && members.has(parent)) members.add(event.session_id);
        }
        return members.has(event.session_id);
      };
      const unsubscribe = a.bus.subscribe(options.family ? '*' : sessionId, (event) => {
        if (!accept(event)) return;
        if (buffer) buffer.push(event);
        else listener(event);
      });
      let last = options.afterId ?? Number.MAX_SAFE_INTEGER;
      if (options.afterId !== undefined) {
        const replayed = [...members]
          .flatMap((id) => a.bus.replay(id, options.afterId!).events)
          .sort((x, y) => x.id - y.id);
        last = options.afterId;
        for (const event of replayed) {
          listener(event);
          last = Math.max(last, event.id);
        }
      }
      const pending = buffer;
      buffer = undefined;
      for (const event of pending) if (options.afterId === undefined || event.id > last) listener(event);
      return unsubscribe;
    },
    pendingPermissions: (sessionId) => app().permissions.pending(sessionId),
    answerPermission: (requestId, decision, by, message) =>
      app().permissions.answer(requestId, decision, { by, message }),
    attach: (sessionId, client) => app().permissions.attach(sessionId, client),
    get permissions() {
      return app().permissions;
    },
    async summarize(sessionId, options = {}): Promise<CompactionResult> {
      const a = app();
      a.sessions.require(sessionId);
      const rt = runtime(sessionId);
      if (rt.state !== 'idle' || busyElsewhere(sessionId)) {
        throw new SvcError(
          'conflict',
          `session ${sessionId} has an active run; wait for it or cancel it before summarizing`,
        );
      }
      setState(sessionId, 'compacting', null);
      publish(sessionId, 'compaction.started', { session_id: sessionId, reason: options.reason ?? 'manual' });
      try {
        const outcome = await compactHistory(a, { sessionId, signal: options.signal });
        publish(sessionId, 'compaction.finished', {
          session_id: sessionId,
          summary_message_id: outcome.summary_message_id,
          tokens_before: outcome.tokens_before,
          tokens_after: outcome.tokens_after,
        });
        return {
          session_id: sessionId,
          summary_message_id: outcome.summary_message_id,
          messages_summarized: outcome.messages_summarized,
          tokens_before: outcome.tokens_before,
          tokens_after: outcome.tokens_after,
        };
      } finally {
        setState(sessionId, 'idle', null);
        notifyIdle(sessionId);
      }
    },
    requestCompaction(sessionId, options = {}) {
      const rt = runtime(sessionId);
      if (!rt.runId || !rt.controller) return false;
      rt.compactRequested = options.reason ?? 'manual';
      return true;
    },
    async runChild(input) {
      const a = app();
      if (closing) throw new SvcError('unavailable', 'svc is shutting down; the sub-agent was not started');
      const parent = a.sessions.require(input.parentSessionId);
      const kind = agentKind(a.config, input.agent ?? 'general', 'subagent');
      if (!input.prompt.trim()) throw new SvcError('invalid_input', 'prompt: must not be empty');
      if (input.maxSteps !== undefined && (!Number.isInteger(input.maxSteps) || input.maxSteps < 1)) {
        throw new SvcError('invalid_input', `max_steps: must be a positive integer, got ${input.maxSteps}`);
      }
      // The child works under the parent's constraints: same mode and staged-workflow phase.
      const child = a.sessions.create({
        parent_id: parent.id,
        title: input.title ?? `${kind.id}: ${preview(input.prompt)}`,
        agent: kind.id,
        mode: parent.mode,
        model: parent.model,
        metadata: {
          ...input.metadata,
          subagent: true,
          ...(input.parentRunId ? { parent_run_id: input.parentRunId } : {}),
          ...(input.workspace ? { workspace_root: input.workspace.root } : {}),
          ...(typeof parent.metadata.workflow_phase === 'string'
            ? { workflow_phase: parent.metadata.workflow_phase }
            : {}),
        },
      });
      const run = a.runs.create({
        session_id: child.id,
        family_session_id: a.sessions.root(child.id),
        parent_run_id: input.parentRunId ?? null,
        agent: kind.id,
        model: input.model ?? null,
        origin: 'subagent',
        prompt: input.prompt,
        options: {
          ...(input.maxSteps !== undefined ? { max_steps: input.maxSteps } : {}),
          ...(input.yolo ? { yolo: true } : {}),
          ...(input.unattended ? { unattended: input.unattended } : {}),
          ...(input.tools?.length ? { tools: input.tools } : {}),
        },
      });
      const waiting = deferred(run.id).promise;
      if (!start(run, { kind, subagent: true, workspace: input.workspace })) {
        throw new SvcError('conflict', `could not start the sub-agent run ${run.id}`);
      }
      const onAbort = () => abortRun(child.id, 'the parent run was cancelled');
      input.signal?.addEventListener('abort', onAbort, { once: true });
      if (input.signal?.aborted) onAbort();
      try {
        return await waiting;
      } finally {
        input.signal?.removeEventListener('abort', onAbort);
      }
    },
    kinds: () => agentKinds(app().config),
    active() {
      return [...runtimes.entries()]
        .filter(([, rt]) => rt.runId !== null)
        .map(([sessionId, rt]) => ({ session_id: sessionId, run_id: rt.runId!, state: rt.state }));
    },
    currentSession() {
      const id = state.currentSession();
      if (!id) return null;
      return app().sessions.get(id) ? id : null;
    },
    setCurrentSession(sessionId) {
      if (sessionId === null) {
        state.clearCurrentSession();
        return;
      }
      app().sessions.require(sessionId);
      state.setCurrentSession(sessionId, app().clock.now());
    },
    promptSections,
    addPromptSection(section) {
      promptSections.push(section);
    },
    async close() {
      closing = true;
      const active = [...runtimes.entries()].filter(([, rt]) => rt.controller && rt.promise);
      for (const [sessionId, rt] of active) {
        rt.stop!.status ??= 'interrupted';
        rt.stop!.reason ??= 'svc shut down while the run was active';
        abortRun(sessionId, 'svc shut down while the run was active', false);
      }
      const settled = Promise.all(active.map(([, rt]) => rt.promise));
      await Promise.race([settled, sleep(CLOSE_TIMEOUT_MS, undefined, { ref: false })]);
    },
  };

  function abortRun(sessionId: string, reason: string, publishCancelling = true) {
    const rt = runtime(sessionId);
    if (!rt.controller || rt.controller.signal.aborted) return;
    rt.stop!.status ??= 'cancelled';
    rt.stop!.reason ??= reason;
    if (publishCancelling) setState(sessionId, 'cancelling', rt.runId);
    rt.controller.abort(new Error(reason));
  }

  function stateOf(sessionId: string): SessionState {
    const rt = runtime(sessionId);
    if (rt.state !== 'idle') return rt.state;
    return busyElsewhere(sessionId) ? 'running' : 'idle';
  }

  return service;
}

function preview(prompt: string): string {
  const line = prompt.trim().split('\n')[0].replace(/\s+/g, ' ');
  return line.length > 80 ? `${line.slice(0, 79)}…` : line;
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

export type { FinalRunStatus };
