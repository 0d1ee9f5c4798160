/**
 * One agent run: the step loop. Each iteration is one model call (svc's step driver over the
 * model's `doStream`, ./step-driver.ts; `SVC_STEP_DRIVER=sdk` for the AI SDK's `streamText`), with
 * tools from the funnel's effective set run through the tool bridge: text and reasoning deltas go
 * onto the bus, the step is persisted as it streams, tool
 * results go back to the model on the next step. The loop stops when the model stops calling
 * tools, the step limit is reached (the last allowed step is told to answer without tools), the
 * run is cancelled, a loop is detected, or the provider fails. Between steps it checks for
 * cancellation (also a cancel asked by another process) and compacts the history when the
 * context nears the model's window.
 * @module
 */
import type { ModelMessage } from 'ai';
import { toSvcError } from '../errors';
import type { ResolvedModel, ResolveRequest } from '../providers/types';
import type { FinalRunStatus } from '../runs/run-ledger';
import type { Message, Usage } from '../sessions/session-store';
import { withReadScope } from '../store/read-scope';
import { activeNames } from './active-tools';
import { releaseOnStop } from './end-step';
import { budgetFailure, type Failure, failureLine, runFailure } from './failure';
import { holdCalls, releaseCalls } from './held-calls';
import { heldEvent } from './held-event';
import { heldOr, heldWrites, preparedHolding, runLedger, writeHeldOnStop } from './held-writes';
import { historyMessages, listedMessages, toModelMessages } from './history';
import { assembleSystemPrompt } from './prompt';
import { promptEvents, promptMessage } from './prompt-message';
import { bridgeFor } from './run-bridge';
import { providerFailure, recordFailure } from './run-failure';
import { type ResumedTurn, resumedTurn, runWaitingCalls, type ToolCallPart } from './run-resume';
import { compactCounted, consumeStream, runPolicies, streamStarter, toolsFor } from './run-stream';
import type { HeldWrites, RunContext, RunExecution, RunOutcome, RunTurn } from './run-types';
import { type SessionFunnel, sessionStartOf, sessionVersion, startGate } from './step-ends';
import { keptSdk, loadSdk } from './step-request';
import { LENGTH_CONTINUATION_NOTE } from './system-prompt.prompt';
import { deferredSpecs, deferredToolsBlock, exposureLevel } from './tool-exposure';

export type { RunExecution, RunOutcome, StopState } from './run-types';

/** The payload of a run's first `phase` event, as its prompt joins the session (a new object each). */
export const promptPhase = (): Record<string, unknown> => ({ phase: 'prompt' });

/** The run origin of the OpenAI-compatible surface (surfaces/http/compat): its calls bill as `compat`. */
const COMPAT_ORIGIN = 'openai_compat';

export async function executeRun(x: RunExecution): Promise<RunOutcome> {
  const { app, run } = x;
  const c: RunContext = {
    x,
    app,
    run,
    kind: x.kind,
    signal: x.controller.signal,
    sessionId: run.session_id,
    usage: { input_tokens: 0, output_tokens: 0, reasoning_tokens: 0, cached_input_tokens: 0 },
    cost: 0,
    steps: 0,
    model: undefined,
    resultMessageId: null,
    held: heldEvent(app, run.id),
    calls: holdCalls(app, run.id),
    ledger: (type, payload = {}) => runLedger(c, type, payload),
  };
  const heldAtEnd = writeHeldOnStop(c, x.stop);
  try {
    // The run's preparation reads its session row once (a read scope, ../store/read-scope.ts); a
    // resumed run's waits for an operator's answer are outside it (`prepareResumed`).
    const prepared = c.x.resume ? await prepareResumed(c) : await withReadScope(() => prepare(c));
    if ('status' in prepared) return prepared;
    const { t, history } = prepared;
    x.stop.release = () => releaseOnStop(c, t);
    const effort = t.session.reasoning_effort ?? c.kind.reasoning_effort;
    const ai = keptSdk() ?? (await loadSdk());
    const opens = x.answered && startGate(c, x.answered); // p-pgoverlap: the first model request's gate
    const startStream = streamStarter(c, t, ai, providerOptionsFor(t.resolved, effort), opens);
    await consumeStream(c, t, startStream(history, c.steps));
    if (opens && !(await opens.opens())) return stopped(c); // it stayed shut: its model request, if sent, aborted (./step-ends.ts)
    await recoverLength(c, t, startStream);
    const settled = await settleRun(c, t);
    // The last step end held for the finish (./last-step-end.ts): failing alone, it fails the run.
    const held = x.lastEnds?.held(run.id);
    if (held) held.fail = (error) => failedRun(c, error);
    return settled;
  } catch (error) {
    return await failedRun(c, error);
  } finally {
    // Still held (no step started, no event appended): written before the run's end is.
    await heldAtEnd();
    // A call no step end carried (a step that failed before its end).
    await releaseCalls(app, c.calls);
  }
}

/** Open the run (or go on with the resumed one), resolve its model, prepare its first step; its history. */
async function prepare(
  c: RunContext,
  resumed?: ResumedTurn,
): Promise<{ t: RunTurn; history: ModelMessage[] } | RunOutcome> {
  const { app, x } = c;
  const started = resumed
    ? { ...resumed, session: await app.sessions.require(c.sessionId) }
    : await openRun(c);
  if ('status' in started) return started;
  // The adaptive monitor handles run.started before the run assembles its prompt and tools (the
  // layer off and nothing of this session to handle: no wait for other sessions' idle handlers).
  if (app.adaptive && !app.adaptive.quiet(c.sessionId, !!x.answered)) await app.adaptive.settled();
  // A compat request's run (the HTTP service's surface handed it its model): the writes of its
  // start-up stretch (model.resolved, the prompt stack row, prompt.assembled) share one commit,
  // made when the process next waits for I/O (the model request), not three commits before the
  // model is asked. Not in `svc run`, whose start-up stretch is long (group commit is off there).
  if (x.handed) app.store.transactions.stepBatch(x.transaction);
  // PostgreSQL: those writes are held, made in one statement with the run's next event (./held-writes.ts).
  const held = heldWrites(c);
  const prepared = await preparedHolding(c, held, Boolean(started.waiting?.length), async () => {
    // SQLite holds from the prompt on (`model.resolved` precedes `openai_compat.request`).
    await resolveModel(c, started.session, held?.now ? undefined : held);
    return await prepareRun(c, started, held);
  });
  const { t, prior } = prepared;
  // Read once its waiting calls ran, outside this scope (`prepareResumed`).
  if (started.waiting?.length) return { t, history: [] };
  // The history prepareRun read, unless the run changed it since (a compaction).
  const history: ModelMessage[] = toModelMessages(
    prior ?? (await historyMessages(app.sessions, await app.sessions.require(c.sessionId))),
  );
  return { t, history };
}

/**
 * A run resumed here (./run-resume.ts): its cut-off calls settled, its preparation in a read
 * scope, its calls that waited for a permission answer run. The asks and the waits for an
 * operator's answer (up to `wait_timeout_s`) are outside the scope: an open scope keeps the
 * process's promise hooks on, and serves the session row as it was before the wait, whatever
 * another node wrote to it meanwhile.
 */
async function prepareResumed(c: RunContext): Promise<{ t: RunTurn; history: ModelMessage[] } | RunOutcome> {
  const resumed = await resumedTurn(c);
  if (resumed === 'afresh') return await withReadScope(() => prepare(c));
  if (resumed === 'unresumable') {
    const message = `run ${c.run.id} cannot be resumed: its prompt is not in session ${c.sessionId}`;
    return outcome(c, 'failed', 'resume_failed', message);
  }
  const prepared = await withReadScope(() => prepare(c, resumed));
  if ('status' in prepared || !resumed.waiting.length) return prepared;
  await runWaitingCalls(c, bridgeFor(c, prepared.t), resumed.waiting);
  const session = await c.app.sessions.require(c.sessionId);
  return { t: prepared.t, history: toModelMessages(await historyMessages(c.app.sessions, session)) };
}

/** A run ready for its first step: its session and prompt (and, resumed, its calls that wait for an answer). */
interface Opened {
  session: RunTurn['session'];
  user: Message;
  waiting?: ToolCallPart[];
  /** The session row's version (./step-ends.ts) when `session` was read: its copy serves the funnel while it holds. */
  version?: number;
  /**
   * The session's messages, read with the prompt's append (PostgreSQL), and the version of its
   * messages (`messagesVersion`) right after that append: the run's history while it holds.
   */
  history?: { messages: Message[]; version: number };
}

/** The outcome of the run with its totals so far. */
function outcome(
  c: RunContext,
  status: FinalRunStatus,
  reason: string | null,
  error: string | null,
  failure: Failure | null = null,
): RunOutcome {
  return {
    status,
    reason,
    error,
    failure,
    steps: c.steps,
    usage: c.usage,
    cost: c.cost,
    model: c.model?.selector ?? c.run.model,
    result_message_id: c.resultMessageId,
  };
}

/** The outcome of a run its controller stopped (cancel, loop stop, shutdown). */
function stopped(c: RunContext): RunOutcome {
  const stop = c.x.stop;
  return outcome(
    c,
    stop.status ?? 'cancelled',
    stop.reason ?? 'cancelled',
    stop.status === 'failed' ? (stop.reason ?? null) : null,
    stop.status === 'failed' && stop.failure ? recordFailure(c.app, stop.failure, c.run.id) : null,
  );
}

/** The prompt joins the session (and titles it); a spent budget refuses the run. */
async function openRun(c: RunContext): Promise<Opened | RunOutcome> {
  const { app, run, sessionId } = c;
  if (!c.x.phased) await c.ledger('phase', promptPhase());
  const prompt = promptMessage(sessionId, run.id, run.prompt);
  // Taken before the append, which moves it once: any other write of this process to the
  // session's messages while it is on its way makes the history read with it stale.
  const messagesAt = app.sessions.messagesVersion?.(sessionId);
  // Written with the run's INSERT (p-pgstart2), or appended here; where the store can, the
  // history the run starts from is read in the append's statement.
  const appended = c.x.prompted
    ? { message: c.x.prompted.message, messages: undefined }
    : app.sessions.appendWithMessages
      ? await app.sessions.appendWithMessages(prompt)
      : { message: await app.sessions.appendMessage(prompt), messages: undefined };
  const user = appended.message;
  // Joined to the start's statement that wrote the message (p-pgstart4), else published now.
  if (!c.x.prompted?.announced) {
    for (const event of promptEvents(sessionId, user.id, run.id))
      app.bus.publish(sessionId, event.type, event.payload);
  }
  c.x.opened?.();
  // Taken before the read: a write of this process from here on makes the copy stale.
  let version: number | undefined = sessionVersion(sessionId);
  let session = c.x.prompted?.session ?? (await app.sessions.require(sessionId));
  if (!session.title) {
    session = await app.sessions.update(sessionId, { title: titleFromPrompt(run.prompt) });
    version = undefined;
  }
  // [budget]: a session or day whose spend reached its limit starts no new run.
  const spent = await app.telemetry.ledger.spent(sessionId);
  if (spent) {
    const failure = recordFailure(app, budgetFailure(spent), run.id);
    await c.ledger('error', { source: 'budget', failure });
    return outcome(c, 'failed', 'budget_exceeded', failureLine(failure), failure);
  }
  const history =
    c.x.prompted?.history ??
    (appended.messages && messagesAt !== undefined
      ? { messages: appended.messages, version: (messagesAt + 1) >>> 0 }
      : undefined);
  return { session, user, version, history };
}

/** The opened session's mode and phase with the version they were read at, while this process has not written the row since. */
function openedFunnel(
  c: RunContext,
  opened: Opened,
): { session: SessionFunnel; version: number } | undefined {
  if (opened.version === undefined || sessionVersion(c.sessionId) !== opened.version) return undefined;
  const phase = opened.session.metadata.workflow_phase;
  return {
    session: { mode: opened.session.mode, phase: typeof phase === 'string' ? phase : undefined },
    version: opened.version,
  };
}

/** Resolve the run's model (run, session, agent kind, config) and record it. */
async function resolveModel(c: RunContext, session: RunTurn['session'], held?: HeldWrites): Promise<void> {
  const { app, run, x } = c;
  const request: ResolveRequest = {
    call_purpose: run.origin === COMPAT_ORIGIN ? 'compat' : x.subagent ? 'subagent' : 'agent_step',
    selector: run.model ?? undefined,
    sessionModel: session.model,
    agentModel: c.kind.model ?? undefined,
    sessionId: c.sessionId,
    runId: run.id,
    signal: c.signal,
  };
  // The model its sender resolved (the compat surface), metered for this run: not resolved twice.
  const model = (x.handed && app.models.bind(x.handed, request)) || (await app.models.resolve(request));
  c.model = model;
  const resolved = {
    model: model.selector,
    source: model.source,
    context_window: model.info.context_window ?? null,
    context_window_source: model.window_source ?? null,
  };
  // The row already names the model (the compat surface created it with the model it resolved):
  // only the event. A model is written while the run is queued or at its end, never by another
  // writer of a running run, so the claimed row's model is the stored one.
  if (run.model === model.selector) {
    const appending = heldOr(c, held, 'model.resolved', resolved);
    if (appending) await appending;
  }
  // The run's model and its `model.resolved` together: one statement where the ledger can.
  else if (app.runs.updateAndAppend)
    await app.runs.updateAndAppend(run.id, { model: model.selector }, 'model.resolved', resolved);
  // With its token, no async scope; joining the sender's body (the API's send) while it is open.
  else
    await app.store.transactions.runWith(async () => {
      await app.runs.update(run.id, { model: model.selector });
      await c.ledger('model.resolved', resolved);
    }, c.x.transaction);
}

/** Before the first step: compaction of a full context, the tool exposure, the system prompt. */
async function prepareRun(
  c: RunContext,
  opened: Opened,
  held?: HeldWrites,
): Promise<{ t: RunTurn; prior: Message[] | undefined }> {
  const { user, session } = opened;
  const { app, sessionId } = c;
  const resolved = c.model!;
  const config = app.config;
  const window = resolved.info.context_window ?? 0;
  // An adaptive genome sets the session's own threshold (compaction_threshold).
  const threshold =
    (await app.adaptive?.compactionThreshold(sessionId)) ?? config.options.compaction_threshold;
  const autoCompact = config.options.auto_compact && window > 0;
  // The history read with the prompt, unless this process wrote a message of the session since.
  const listed =
    opened.history && app.sessions.messagesVersion?.(sessionId) === opened.history.version
      ? listedMessages(app.sessions, opened.history.messages)
      : app.sessions;
  const prior = await historyMessages(listed, session);
  const lastTokens = lastReportedTokens(prior);
  let failedCompactions = 0;
  // A compaction (tried) rewrites the history: the caller reads it again then.
  const compacting = autoCompact && lastTokens / window >= threshold && prior.length > 2;
  if (compacting) {
    // The compaction's events follow what is held.
    await held?.write();
    if (!(await compactCounted(c, { keepFromMessageId: user.id }))) failedCompactions++;
  }
  const policies = runPolicies(c);
  // Tool exposure (src/agent/tool-exposure.ts): with many tools against the window, only the
  // core ones (and those already called in this run) travel with their schemas.
  // The session row the run opened with serves the funnel unless this process wrote it since
  // (the same moment of the preparation as PostgreSQL's read scope answers).
  const funnel = openedFunnel(c, opened);
  // A run whose start statement inserted its session: no policy layer or section read (p-packstart).
  const start = sessionStartOf(c);
  const effective = await toolsFor(c, policies, funnel?.session, funnel?.version, start);
  const level = exposureLevel(config.options.tool_exposure, effective, window);
  const defer = level !== 'all';
  const deferredBlock = defer ? deferredToolsBlock(deferredSpecs(effective, level), level) : undefined;
  held?.holdPrompt();
  const prompt = await assembleSystemPrompt(app, {
    sessionId,
    kind: c.kind,
    signal: c.signal,
    runId: c.run.id,
    start,
    extra: deferredBlock ? [{ name: 'deferred_tools', source: 'tool_exposure', text: deferredBlock }] : [],
  });
  const appending = heldOr(c, held, 'prompt.assembled', prompt.manifest);
  if (appending) await appending;
  // Prompt assembly started the [mcp.<id>] connections; give them a bounded moment so the first
  // step already sees their tools (later steps pick up servers that connect late).
  if (Object.keys(config.mcp).length > 0)
    await app.mcpClients.settled({ timeoutMs: 10_000, signal: c.signal });
  const t: RunTurn = {
    session,
    resolved,
    config,
    window,
    threshold,
    autoCompact,
    policies,
    level,
    defer,
    system: prompt.system,
    maxSteps: c.run.options.max_steps ?? c.kind.max_steps ?? config.options.max_steps,
    called: new Set<string>(),
    // The effective set is computed again before every step (prepareStep): approve_plan, a mode
    // change, a config reload or an MCP server that connects during the run change what the next
    // step may call.
    active: activeNames(effective),
    compacted: undefined,
    lastContext: 0,
    stepsClosed: 0,
    stepClosedWaiters: new Set(),
    failedCompactions,
    recorder: undefined,
    stepUsage: null,
    finishReason: undefined,
    streamError: undefined,
    lastToolCalls: 0,
  };
  return { t, prior: compacting ? undefined : prior };
}

/** A step cut by the output token limit: new streams from the stored history and a continuation note. */
async function recoverLength(c: RunContext, t: RunTurn, startStream: ReturnType<typeof streamStarter>) {
  const recovery = t.config.options.length_recovery;
  const maxRecoveries = recovery.enabled ? recovery.max_attempts : 0;
  let recoveries = 0;
  while (
    t.finishReason === 'length' &&
    recoveries < maxRecoveries &&
    c.steps < t.maxSteps &&
    !c.signal.aborted &&
    t.streamError === undefined
  ) {
    recoveries++;
    await c.ledger('length_recovery', {
      attempt: recoveries,
      max_attempts: maxRecoveries,
      step: c.steps,
      output_tokens: (t.stepUsage as Usage | null)?.output_tokens ?? null,
    });
    t.compacted = undefined;
    const stored = toModelMessages(
      await historyMessages(c.app.sessions, await c.app.sessions.require(c.sessionId)),
    );
    await consumeStream(
      c,
      t,
      startStream([...stored, { role: 'user', content: LENGTH_CONTINUATION_NOTE }], c.steps),
    );
  }
}

/** How the streams ended: stopped, the step limit, a provider failure, or completed. */
async function settleRun(c: RunContext, t: RunTurn): Promise<RunOutcome> {
  if (c.signal.aborted) return stopped(c);
  const limit = `max_steps: the step limit (${t.maxSteps}) was reached before the model finished`;
  const limited = () =>
    outcome(
      c,
      'failed',
      limit,
      limit,
      recordFailure(
        c.app,
        runFailure('step_limit', { model: c.model?.selector, message: limit, maxSteps: t.maxSteps }),
        c.run.id,
      ),
    );
  if (isToolChoiceViolation(t.streamError)) return limited();
  if (t.streamError !== undefined) {
    const { failure, message } = providerFailure(c.app, t.resolved, t.streamError, c.run.id);
    await c.ledger('error', { source: 'provider', message, failure });
    return outcome(c, 'failed', 'provider_error', message, failure);
  }
  if (t.finishReason === 'tool-calls' && t.lastToolCalls > 0) return limited();
  const reason = t.finishReason === 'length' ? 'length: the model reached its output token limit' : null;
  return outcome(c, 'completed', reason, null);
}

/** A run that threw: stopped, or failed (the model unavailable, or an error of the run). */
async function failedRun(c: RunContext, error: unknown): Promise<RunOutcome> {
  if (c.signal.aborted) return stopped(c);
  const { app, run } = c;
  const model = c.model;
  const e = toSvcError(error);
  if (e.code === 'internal') app.log.error('run failed', { run_id: run.id, error: e.cause ?? e });
  const message = app.redactor.string(e.message);
  const unavailable = e.code === 'config_error' || !model;
  const failure = recordFailure(
    app,
    runFailure(unavailable ? 'model_unavailable' : 'run_error', {
      model: model?.selector ?? run.model,
      message,
    }),
    run.id,
  );
  await c.ledger('error', { source: model ? 'run' : 'model_resolution', code: e.code, message, failure });
  return outcome(c, 'failed', unavailable ? 'model_unavailable' : 'error', message, failure);
}

function lastReportedTokens(messages: { role: string; usage: Usage | null }[]): number {
  for (let i = messages.length - 1; i >= 0; i--) {
    const usage = messages[i].role === 'assistant' ? messages[i].usage : null;
    if (usage) return usage.input_tokens + usage.output_tokens;
  }
  return 0;
}

/** The model called a tool on the last step although it was told not to (AI SDK ToolChoiceViolationError). */
function isToolChoiceViolation(error: unknown): boolean {
  return (error as { name?: string } | undefined)?.name === 'AI_ToolChoiceViolationError';
}

export function titleFromPrompt(prompt: string): string {
  const line = prompt.trim().split('\n')[0].replace(/\s+/g, ' ');
  return line.length > 60 ? `${line.slice(0, 59)}…` : line || 'untitled';
}

const THINKING_BUDGET: Record<string, number> = { minimal: 1024, low: 4000, medium: 12_000, high: 32_000 };

/** Reasoning effort in each provider's own option shape. */
export function providerOptionsFor(
  model: ResolvedModel,
  effort: string | null | undefined,
): Record<string, Record<string, never>> | undefined {
  if (!effort) return undefined;
  const provider =
    typeof model.language_model === 'object' && model.language_model !== null
      ? String((model.language_model as { provider?: string }).provider ?? '')
      : '';
  const budget = THINKING_BUDGET[effort] ?? THINKING_BUDGET.medium;
  const options: Record<string, Record<string, unknown>> = provider.startsWith('openai')
    ? { openai: { reasoningEffort: effort } }
    : provider.startsWith('anthropic')
      ? { anthropic: { thinking: { type: 'enabled', budgetTokens: budget } } }
      : provider.startsWith('google')
        ? { google: { thinkingConfig: { thinkingBudget: budget, includeThoughts: true } } }
        : { [provider.split('.')[0] || model.provider]: { reasoningEffort: effort } };
  return options as Record<string, Record<string, never>>;
}
