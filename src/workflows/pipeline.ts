/**
 * A pipeline: the durable frame of a multi-step workflow. It gets its own session (a child of
 * the caller's session, or a new top-level one) and its own run in the ledger (origin
 * `workflow`, agent = the workflow kind, parent run = the caller's run), so every step is a
 * sub-agent run whose parent is the pipeline run and whose family is the caller's family.
 * `list_agent_runs family_session_id` shows the whole tree; `update_agent_run cancel` on the
 * pipeline run cancels it (and its running steps). The pipeline session holds a user message
 * (what was asked) and an assistant message (the summary), so it reads like any session.
 * @module
 */
import type { AgentService, RunResult } from '../agent/types';
import type { Config } from '../config/schema';
import { SvcError } from '../errors';
import type { EventBus } from '../events/bus';
import type { Logger } from '../log';
import type { Redactor } from '../redact';
import type { RunLedger } from '../runs/run-ledger';
import type { AgentRun } from '../runs/types';
import type { Session, SessionStore } from '../sessions/session-store';
import type { Clock } from '../util/ids';
import type { Caller } from './lineage';
import { assertDepth, narrowTools } from './lineage';
import type { ToolCatalog } from './ports';
import type { WorkflowKind, WorkflowRun, WorkflowRunStore, WorkflowStatus } from './workflow-runs';

const CANCEL_POLL_MS = 500;

export interface PipelineSpec {
  kind: WorkflowKind;
  name: string;
  /** What the row belongs to (team id, template name). */
  ref?: string;
  /** Title of the pipeline session. */
  title: string;
  /** What was asked, in words: the pipeline run's prompt and the session's user message. */
  request: string;
  input: Record<string, unknown>;
}

export interface ChildTask {
  prompt: string;
  agent?: string;
  /** Tools the task asks for, narrowed to the caller's ceiling. */
  tools?: string[];
  title?: string;
  maxSteps?: number;
  model?: string;
  /** Lineage kept on the child session (recipe step, task id, team member…). */
  metadata?: Record<string, unknown>;
  /** The input field the task comes from, for error messages (`steps[1]`). */
  field: string;
}

export interface PipelineOutcome {
  status: Exclude<WorkflowStatus, 'running' | 'interrupted'>;
  /** The summary shown as the pipeline session's answer. */
  text: string;
  result: Record<string, unknown>;
  error?: string | null;
}

export interface Pipeline {
  readonly id: string;
  readonly sessionId: string;
  readonly runId: string;
  readonly parentRunId: string | null;
  readonly familySessionId: string;
  /** Aborted by the caller, by a ledger cancel of the pipeline run, or by svc shutting down. */
  readonly signal: AbortSignal;
  /** Things the caller should know (tools dropped by the ceiling…). */
  readonly warnings: string[];
  /** Append an event to the pipeline run's ledger. */
  event(type: string, payload: Record<string, unknown>): void;
  /** Run one step as a sub-agent of the pipeline run. */
  child(task: ChildTask): Promise<RunResult>;
  /** Throw a `cancelled` error when the pipeline was stopped. */
  throwIfStopped(): void;
  /** End the pipeline run (once); the final status accounts for a cancel or a shutdown. */
  finish(outcome: PipelineOutcome): Promise<WorkflowRun>;
}

export interface PipelineEntry {
  /** svc is shutting down: start no more steps; the pipeline ends `interrupted`. */
  interrupt(reason: string): void;
  /** Abort what still runs (after the grace period of a shutdown). */
  abort(reason: string): void;
  done: Promise<void>;
}

export interface PipelineRegistry {
  /** Throws `unavailable` while svc shuts down. */
  assertOpen(): void;
  add(entry: PipelineEntry): () => void;
}

/** What a pipeline uses: its stores, the session and run ledgers, the agent for its steps. */
export interface PipelineDeps {
  readonly store: WorkflowRunStore;
  readonly registry: PipelineRegistry;
  readonly sessions: Pick<SessionStore, 'get' | 'require' | 'create' | 'root' | 'appendMessage'>;
  readonly runs: Pick<RunLedger, 'create' | 'cancelRequested' | 'append' | 'update'>;
  readonly bus: Pick<EventBus, 'publish'>;
  readonly redactor: Pick<Redactor, 'string' | 'value'>;
  readonly log: Pick<Logger, 'warn' | 'error'>;
  readonly clock: Clock;
  readonly config: () => Config;
  readonly agent: () => Pick<AgentService, 'runChild'>;
  readonly tools: () => ToolCatalog;
}

/** The records a pipeline starts with: its session, its ledger run, its workflow_runs row. */
interface PipelineRecords {
  session: Session;
  familySessionId: string;
  run: AgentRun;
  row: WorkflowRun;
}

export async function startPipeline(
  deps: PipelineDeps,
  caller: Caller,
  spec: PipelineSpec,
): Promise<Pipeline> {
  deps.registry.assertOpen();
  const { session, familySessionId, run, row } = await openRecords(deps, caller, spec);
  const stopper = createStopper(deps, caller, run.id);
  const event = async (type: string, payload: Record<string, unknown>) => {
    try {
      await deps.runs.append(run.id, type, deps.redactor.value(payload) as Record<string, unknown>);
    } catch (error) {
      deps.log.warn('workflow ledger append failed', { run_id: run.id, type, error });
    }
  };
  await event('workflow.started', { workflow_run_id: row.id, kind: spec.kind, name: spec.name });
  let finished: WorkflowRun | undefined;

  const pipeline: Pipeline = {
    id: row.id,
    sessionId: session.id,
    runId: run.id,
    parentRunId: run.parent_run_id,
    familySessionId,
    signal: stopper.signal,
    warnings: [],
    event,
    throwIfStopped: () => stopper.throwIfStopped(),
    async child(task) {
      pipeline.throwIfStopped();
      const narrowed = narrowTools(
        { tools: deps.tools() },
        task.tools,
        caller.ceiling,
        `${task.field}.tools`,
      );
      if (narrowed.dropped.length) {
        pipeline.warnings.push(
          `${task.field}.tools: ${narrowed.dropped.join(', ')} dropped (not available to the calling agent)`,
        );
      }
      const result = await deps.agent().runChild({
        parentSessionId: session.id,
        parentRunId: run.id,
        prompt: task.prompt,
        agent: task.agent,
        title: task.title,
        signal: stopper.signal,
        tools: narrowed.tools,
        yolo: caller.yolo,
        unattended: caller.unattended,
        maxSteps: task.maxSteps,
        model: task.model,
        metadata: { workflow_run_id: row.id, ...task.metadata },
      });
      await event('workflow.child.finished', {
        ...task.metadata,
        run_id: result.run_id,
        session_id: result.session_id,
        status: result.status,
      });
      return result;
    },
    async finish(outcome) {
      if (finished) return finished;
      const { status: stopStatus, reason: stopReason } = stopper.settle();
      const status: WorkflowStatus =
        stopStatus && outcome.status !== 'completed' ? stopStatus : outcome.status;
      const error = outcome.error ?? (stopStatus && status === stopStatus ? (stopReason ?? null) : null);
      try {
        finished = await recordFinish(deps, { session, run, row }, spec, event, {
          status,
          error,
          stopReason,
          outcome,
        });
      } catch (failure) {
        deps.log.error('workflow finish failed', { workflow_run_id: row.id, error: failure });
        finished = { ...row, status, error };
      } finally {
        stopper.done();
      }
      return finished;
    },
  };
  return pipeline;
}

async function openRecords(deps: PipelineDeps, caller: Caller, spec: PipelineSpec): Promise<PipelineRecords> {
  const parent = caller.sessionId ? await deps.sessions.require(caller.sessionId) : undefined;
  if (parent) await assertDepth({ sessions: deps.sessions, config: deps.config() }, parent.id, spec.kind);
  const phase = parent?.metadata.workflow_phase;
  const session = await deps.sessions.create({
    parent_id: parent?.id ?? null,
    title: spec.title,
    ...(parent ? { mode: parent.mode, model: parent.model } : {}),
    metadata: {
      workflow: spec.kind,
      workflow_name: spec.name,
      ...(caller.runId ? { parent_run_id: caller.runId } : {}),
      ...(typeof phase === 'string' ? { workflow_phase: phase } : {}),
    },
  });
  const familySessionId = await deps.sessions.root(session.id);
  const run = await deps.runs.create({
    session_id: session.id,
    family_session_id: familySessionId,
    parent_run_id: caller.runId ?? null,
    agent: spec.kind,
    origin: 'workflow',
    prompt: spec.request,
    status: 'running',
    options: {
      ...(caller.yolo ? { yolo: true } : {}),
      ...(caller.unattended ? { unattended: caller.unattended } : {}),
      ...(caller.ceiling ? { tools: caller.ceiling } : {}),
    },
  });
  const row = await deps.store.create({
    kind: spec.kind,
    name: spec.name,
    ref: spec.ref,
    session_id: session.id,
    run_id: run.id,
    parent_run_id: caller.runId ?? null,
    input: spec.input,
  });
  await postMessage(deps, session.id, run.id, 'user', spec.request);
  deps.bus.publish(session.id, 'run.started', {
    session_id: session.id,
    run_id: run.id,
    parent_run_id: run.parent_run_id,
    family_session_id: familySessionId,
    agent: spec.kind,
    model: '',
    origin: 'workflow',
  });
  return { session, familySessionId, run, row };
}

/** Append a text message to the pipeline session and announce it (created, then completed). */
async function postMessage(
  deps: Pick<PipelineDeps, 'sessions' | 'bus'>,
  sessionId: string,
  runId: string,
  role: 'user' | 'assistant',
  text: string,
): Promise<string> {
  const message = await deps.sessions.appendMessage({
    session_id: sessionId,
    role,
    parts: [{ type: 'text', text }],
    run_id: runId,
  });
  deps.bus.publish(sessionId, 'message.created', {
    session_id: sessionId,
    message_id: message.id,
    role,
    run_id: runId,
  });
  deps.bus.publish(sessionId, 'message.completed', {
    session_id: sessionId,
    message_id: message.id,
    run_id: runId,
  });
  return message.id;
}

interface Stopper {
  readonly signal: AbortSignal;
  throwIfStopped(): void;
  /** Stop watching (caller abort, ledger cancel); what stopped the pipeline, if anything. */
  settle(): { status?: 'cancelled' | 'interrupted'; reason?: string };
  /** The pipeline recorded its end: untrack it and release a waiting shutdown. */
  done(): void;
}

/**
 * What stops a pipeline: the caller's signal, a cancel requested through the run ledger
 * (polled), and svc shutting down (the registry's interrupt, then abort).
 */
function createStopper(
  deps: Pick<PipelineDeps, 'runs' | 'registry'>,
  caller: Caller,
  runId: string,
): Stopper {
  const controller = new AbortController();
  let stopStatus: 'cancelled' | 'interrupted' | undefined;
  let stopReason: string | undefined;
  const stop = (status: 'cancelled' | 'interrupted', reason: string) => {
    if (controller.signal.aborted) return;
    stopStatus = status;
    stopReason = reason;
    controller.abort(new SvcError('cancelled', reason));
  };
  const onCallerAbort = () => stop('cancelled', 'cancelled by the caller');
  caller.signal.addEventListener('abort', onCallerAbort, { once: true });
  if (caller.signal.aborted) onCallerAbort();
  const poll = setInterval(() => {
    deps.runs.cancelRequested(runId).then(
      (requested) => {
        if (requested) stop('cancelled', 'cancelled (requested through the run ledger)');
      },
      () => {
        // database closing: shutdown stops the pipeline
      },
    );
  }, CANCEL_POLL_MS);
  poll.unref();
  let resolveDone!: () => void;
  const done = new Promise<void>((resolve) => {
    resolveDone = resolve;
  });
  let interrupted = false;
  const untrack = deps.registry.add({
    interrupt: (reason) => {
      interrupted = true;
      stopStatus ??= 'interrupted';
      stopReason ??= reason;
    },
    abort: (reason) => stop('interrupted', reason),
    done,
  });
  return {
    signal: controller.signal,
    throwIfStopped() {
      if (interrupted) throw new SvcError('unavailable', stopReason ?? 'svc is shutting down');
      if (controller.signal.aborted) {
        throw new SvcError('cancelled', stopReason ?? 'the workflow was cancelled');
      }
    },
    settle() {
      clearInterval(poll);
      caller.signal.removeEventListener('abort', onCallerAbort);
      return { status: stopStatus, reason: stopReason };
    },
    done() {
      untrack();
      resolveDone();
    },
  };
}

/** Record the end: the session's answer, the ledger run's status, the workflow_runs row. */
async function recordFinish(
  deps: PipelineDeps,
  records: Pick<PipelineRecords, 'session' | 'run' | 'row'>,
  spec: PipelineSpec,
  event: (type: string, payload: Record<string, unknown>) => void,
  end: { status: WorkflowStatus; error: string | null; stopReason?: string; outcome: PipelineOutcome },
): Promise<WorkflowRun> {
  const { session, run, row } = records;
  const { status, error, stopReason, outcome } = end;
  const answerId = await postMessage(
    deps,
    session.id,
    run.id,
    'assistant',
    outcome.text || `(${spec.kind} ${status})`,
  );
  const redactedError = error ? deps.redactor.string(error) : null;
  await deps.runs.update(run.id, {
    status,
    reason: status === 'completed' ? null : (stopReason ?? redactedError),
    error: status === 'failed' ? redactedError : null,
    result_message_id: answerId,
    finished_at: deps.clock.now(),
  });
  event('run.finished', { status, workflow_run_id: row.id });
  deps.bus.publish(session.id, 'run.finished', {
    session_id: session.id,
    run_id: run.id,
    status,
    ...(status !== 'completed' && (stopReason ?? redactedError)
      ? { reason: (stopReason ?? redactedError)! }
      : {}),
    steps: 0,
    usage: { input_tokens: 0, output_tokens: 0 },
    cost: 0,
  });
  await deps.store.finish(row.id, {
    status,
    result: deps.redactor.value(outcome.result) as Record<string, unknown>,
    error: redactedError,
  });
  return (await deps.store.get(row.id))!;
}
