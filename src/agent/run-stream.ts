/**
 * The stream of a run's steps: svc's step driver (./step-driver.ts, the model's `doStream`) or,
 * with `SVC_STEP_DRIVER=sdk`, one AI SDK `streamText` call drives every step with the tool
 * bridge, deferred tool exposure and the per-step preparation (tool set, last-step note,
 * compaction); their parts are recorded as they arrive (./step-recorder.ts).
 * @module
 */
import type { LanguageModelV3 } from '@ai-sdk/provider';
import type { LanguageModel, ModelMessage } from 'ai';
import { isHandOver } from '../errors';
import type { FunnelContext, SessionStart } from '../permissions/tool-policy';
import { activeList, activeNames } from './active-tools';
import { kindPolicies } from './agent-kinds';
import { MAX_FAILED_COMPACTIONS } from './compaction';
import { fitToBudget, freshToolTokens } from './context-fit';
import { endStep } from './end-step';
import { flushCalls, takeCall } from './held-calls';
import { historyMessages, toModelMessages } from './history';
import { bridgeFor, holdsCall, stepOnce } from './run-bridge';
import type { RunContext, RunTurn } from './run-types';
import { aheadEnded, aheadHeld, aheadSession, cancelRequested, lastContextOf, takeAhead } from './step-ahead';
import { stepEndJoined } from './step-close';
import { type DrivenSteps, driveSteps, type StepPart } from './step-driver';
import {
  rememberRunStart,
  runStartFor,
  type SessionFunnel,
  type StartGate,
  sessionStartOf,
  sessionVersion,
  stampStepEnd,
  stepEndFor,
  stepsClosed,
} from './step-ends';
import { StepRecorder } from './step-recorder';
import { FINAL_STEP_NOTE } from './system-prompt.prompt';
import { inFullAt, sentInFull } from './tool-exposure';
import type { AgentToolSpec } from './toolbox';

type Ai = typeof import('ai');
/**
 * A stream of a run's steps: the own driver's (its parts pushed through `drive`) or `streamText`'s
 * (read through `fullStream`).
 */
export type StartStream = (
  messages: ModelMessage[],
  stepsBefore: number,
) => { fullStream: AsyncIterable<StreamPart | StepPart>; drive?: DrivenSteps['drive'] };

/**
 * The effective tools of the run's session context (the funnel) for its next step. `session`: the
 * session's mode and phase already in hand (the row the step's end wrote back, or the row the
 * run's preparation read, with its version `openedAt`), so the funnel does not read it again.
 * `start`: what the run's start knows of its session (its preparation and first step only).
 */
export async function toolsFor(
  c: RunContext,
  policies: RunTurn['policies'],
  session?: SessionFunnel,
  openedAt?: number,
  start?: SessionStart,
): Promise<readonly AgentToolSpec[]> {
  const version = openedAt ?? (session ? 0 : sessionVersion(c.sessionId));
  // Literals, not `{ ...session, agent, … }` (a map of its own each call on Node 20, p-sqlprofile).
  const overrides: FunnelContext = session
    ? { mode: session.mode, phase: session.phase, agent: c.kind.id, yolo: c.run.options.yolo, policies }
    : { agent: c.kind.id, yolo: c.run.options.yolo, policies };
  const context = await c.app.funnelContext(c.sessionId, overrides, start);
  // The row read by the run's preparation may serve its first step (./step-ends.ts).
  const atStart = !session || openedAt !== undefined;
  if (atStart && typeof context.mode === 'string' && Object.keys(c.app.config.mcp).length === 0) {
    rememberRunStart(c, { mode: context.mode, phase: context.phase }, version);
  }
  return c.x.toolbox.effective(context);
}

/** The run's policies: its kind's, and a sub-agent task's tool list. */
export function runPolicies(c: RunContext) {
  return [...kindPolicies(c.kind, { subagent: c.x.subagent }), ...onlyTools(c.run.options.tools)];
}

function onlyTools(names: string[] | undefined): RunTurn['policies'] {
  if (!names?.length) return [];
  const allowed = new Set(names);
  return [
    {
      source: 'sub-agent task',
      removes: (tool) => (allowed.has(tool.name) ? undefined : 'not in the task tool list'),
    },
  ];
}

/**
 * The stream starter of the run. One stream drives every step: svc's own step driver
 * (./step-driver.ts, calling the model's `doStream`), or with `SVC_STEP_DRIVER=sdk` one AI SDK
 * `streamText` call (its multi-step tool calling). The history is converted once, and the step's
 * preparation (prepareStep) adjusts each step (tool set, last-step note, compaction). A step cut
 * by the output token limit ends the stream; length recovery starts another one from the stored
 * history plus a continuation note (not stored). `opens`: the first model request's gate of a run
 * prepared during its start's round trip (p-pgoverlap, ./step-ends.ts `startGate`), made by the
 * run loop, which asks it again after the stream.
 */
export function streamStarter(
  c: RunContext,
  t: RunTurn,
  ai: Ai,
  providerOptions: Record<string, Record<string, never>> | undefined,
  opens?: StartGate,
): StartStream {
  const { x, signal } = c;
  const bridge = bridgeFor(c, t);
  const resolved = t.resolved;
  // Deferred exposure: the request carries the core tools and those called in this run; every
  // effective tool stays callable (calls are parsed against the whole active set).
  const sendsInFull = (name: string) => {
    if (t.called.has(name)) return true;
    const tool = x.toolbox.get(name);
    return tool ? sentInFull(tool, t.level) : true;
  };
  const model = resolved.language_model as LanguageModelV3;
  const own = process.env.SVC_STEP_DRIVER !== 'sdk' && model.specificationVersion === 'v3';
  if (!own) {
    const begin = sdkStarter(c, t, ai, providerOptions, bridge, sendsInFull);
    // `streamText` asks the model at its call: made once the gate opened, nothing when it stays shut.
    return opens ? (messages, steps) => ({ fullStream: gated(opens, () => begin(messages, steps)) }) : begin;
  }
  return (messages, stepsBefore) => {
    const registered = x.toolbox.registered();
    const prepare = stepPreparer(c, t, registered, stepsBefore);
    const tools = bridge.toolSet(ai, registered);
    return driveSteps({
      ai,
      model,
      system: t.system,
      messages,
      tools,
      context: bridge.context,
      maxSteps: t.maxSteps - stepsBefore,
      signal,
      maxRetries: 2,
      ...(resolved.info.max_output ? { maxOutputTokens: resolved.info.max_output } : {}),
      ...(providerOptions ? { providerOptions } : {}),
      ...(t.defer ? { sendsTool: inFullAt(tools, registered, t.level), calledTools: t.called } : {}),
      // PostgreSQL: a tool step's end overlaps the next model request (./step-ahead.ts).
      ...(stepEndJoined(c.app) ? { overlapsStepEnd: true } : {}),
      ...(opens ? { opens } : {}),
      prepareStep: async (stepNumber, stepMessages, ending) => {
        const settings = await prepare(stepNumber, stepMessages, ending);
        return {
          ...(settings.activeTools ? { activeTools: settings.activeTools } : {}),
          ...(settings.toolChoice ? { toolChoice: settings.toolChoice } : {}),
          ...(settings.system ? { system: settings.system } : {}),
          ...(settings.messages ? { messages: settings.messages } : {}),
          ...(settings.holds ? { holds: settings.holds } : {}),
        };
      },
    });
  };
}

async function* gated(opens: StartGate, stream: () => ReturnType<StartStream>) {
  if (await opens.opens()) yield* stream().fullStream;
}

/** The stream starter on the AI SDK's `streamText` (`SVC_STEP_DRIVER=sdk`). */
function sdkStarter(
  c: RunContext,
  t: RunTurn,
  ai: Ai,
  providerOptions: Record<string, Record<string, never>> | undefined,
  bridge: ReturnType<typeof bridgeFor>,
  sendsInFull: (name: string) => boolean,
): StartStream {
  const { x, signal } = c;
  const resolved = t.resolved;
  const exposing = (sdk: Ai, inner: LanguageModel) =>
    sdk.wrapLanguageModel({
      model: inner as LanguageModelV3,
      middleware: {
        specificationVersion: 'v3',
        transformParams: async ({ params }) =>
          params.tools
            ? {
                ...params,
                tools: params.tools.filter((tool) => tool.type !== 'function' || sendsInFull(tool.name)),
              }
            : params,
      },
    });
  return (messages, stepsBefore) => {
    const registered = x.toolbox.registered();
    const prepare = stepPreparer(c, t, registered, stepsBefore);
    return ai.streamText({
      model: t.defer ? exposing(ai, resolved.language_model) : resolved.language_model,
      system: t.system,
      messages,
      tools: bridge.toolSet(ai, registered),
      experimental_context: bridge.context,
      // No call-level activeTools: prepareStep sets them for every step (the first included).
      stopWhen: ai.stepCountIs(t.maxSteps - stepsBefore),
      abortSignal: signal,
      maxRetries: 2,
      ...(resolved.info.max_output ? { maxOutputTokens: resolved.info.max_output } : {}),
      ...(providerOptions ? { providerOptions } : {}),
      prepareStep: async ({ stepNumber, messages: stepMessages }) => prepare(stepNumber, stepMessages),
      // Errors arrive as stream parts; the SDK's default handler would print to the console.
      onError: () => {},
    });
  };
}

/**
 * The preparation of each step of one stream: cancel requested through the ledger, compaction
 * (asked for, or the context near the window), the step's active tools, the last step's note,
 * and the messages cut to fit the window.
 */
function stepPreparer(c: RunContext, t: RunTurn, registered: readonly AgentToolSpec[], stepsBefore: number) {
  const { app, run, x, sessionId, signal } = c;
  return async (stepNumber: number, stepMessages: ModelMessage[], ending?: Promise<void>) => {
    const step = stepsBefore + stepNumber;
    let requested = ending ? x.takeCompactionRequest() : undefined;
    // The step before's end still in flight (PostgreSQL, ./step-ahead.ts): the session's mode
    // taken before it was sent, its cancel flag checked when it answers; a compaction waits.
    const copy = ending ? aheadSession(t, sessionId) : undefined;
    const ahead = copy && !requested && !compactionDue(t, lastContextOf(t), stepMessages) ? copy : undefined;
    if (ending && !ahead) await ending;
    // The stream's reader records the previous step (its usage, the context gauge) while the
    // SDK already prepares this one: wait until it is closed, so the decisions below see it.
    if (stepNumber > 0 && !ahead) await stepsClosed(t, step);
    // The cancel flag and the session's mode as the step before left them (./step-ends.ts).
    const end = stepNumber > 0 && !ahead ? stepEndFor(t, sessionId, step) : undefined;
    const first = step === 0 ? runStartFor(c, sessionId) : undefined;
    // Before its start's answer (p-pgoverlap): the funnel's read of the new session waits for it.
    if (step === 0 && !first && x.answered && x.answered.ok === undefined) await x.answered.answer;
    if (step > 0 && !ahead) {
      if (end ? end.cancelRequested : await app.runs.cancelRequested(run.id)) cancelRequested(c);
      requested ??= x.takeCompactionRequest();
      const auto = compactionDue(t, t.lastContext, stepMessages);
      if (!signal.aborted && (requested || auto)) {
        if (!(await compactCounted(c, { reason: requested ?? 'auto' }))) t.failedCompactions++;
        t.compacted = {
          prefix: toModelMessages(await historyMessages(app.sessions, await app.sessions.require(sessionId))),
          cut: stepMessages.length,
        };
      }
    }
    const taken = ahead ? await ahead : undefined;
    const start = step === 0 ? sessionStartOf(c) : undefined;
    t.active = activeNames(await toolsFor(c, t.policies, taken ?? end?.session ?? first, undefined, start));
    const final = step === t.maxSteps - 1;
    // A window already overflowing (a huge tool result, a long history): the largest tool
    // outputs are cut in the request (not in the store) so it fits (./context-fit.ts).
    const outgoing = t.compacted
      ? [...t.compacted.prefix, ...stepMessages.slice(t.compacted.cut)]
      : stepMessages;
    const fitted =
      t.window > 0 ? fitToBudget(outgoing, messageBudget(t)) : { messages: outgoing, trimmed: 0 };
    if (fitted.trimmed > 0) {
      if (ahead && ending) await ending; // its run event after the step before's `step.finished`
      await c.ledger('context.trimmed', { step: c.steps, characters: fitted.trimmed });
    }
    return {
      activeTools: activeList(t.active, registered),
      ...(final ? { toolChoice: 'none' as const, system: `${t.system}\n\n${FINAL_STEP_NOTE}` } : {}),
      ...(t.compacted || fitted.trimmed > 0 ? { messages: fitted.messages } : {}),
      // The tools of a session copy taken before the step end: asked again if it answers another mode.
      ...(ahead ? { holds: () => aheadHeld(t, sessionId, step, taken) } : {}),
    };
  };
}

type StreamPart = ReturnType<Ai['streamText']>['fullStream'] extends AsyncIterable<infer P> ? P : never;

/** The parts whose recording writes to the database (the others take no write lock). */
const WRITING_PARTS = new Set<string>([
  'start-step',
  'text-delta',
  'reasoning-delta',
  'tool-call',
  'tool-result',
  'tool-error',
  'finish-step',
]);

/**
 * Record one part of the stream: a promise only for the parts that wait for something (a write
 * on their path); the others are recorded synchronously, with no promise each.
 */
function recordPart(c: RunContext, t: RunTurn, part: StreamPart | StepPart): Promise<void> | undefined {
  // A waiting delta failed (its message's write): the stream ends here, as at the delta's own await.
  const failed = t.deltaFailed;
  if (failed) {
    t.deltaFailed = undefined;
    t.deltas = undefined;
    return Promise.reject(failed.error);
  }
  // Deltas still waiting for their message: every other part is recorded after them, in order.
  if (t.deltas && part.type !== 'text-delta' && part.type !== 'reasoning-delta') {
    const waiting = t.deltas;
    t.deltas = undefined;
    return waiting.then(() => recordPart(c, t, part));
  }
  const { app } = c;
  // The step's writes of this busy stretch share one commit (stepBatch in src/store/db.ts).
  if (WRITING_PARTS.has(part.type)) app.store.transactions.stepBatch();
  switch (part.type) {
    case 'start-step':
      return startStep(c, t);
    case 'text-delta':
      return deltaWaits(t, t.recorder?.textDelta(part.id, part.text, part.providerMetadata as never));
    case 'text-end':
      t.recorder?.partMetadata('text', part.id, part.providerMetadata as never);
      return undefined;
    case 'reasoning-delta':
      return deltaWaits(t, t.recorder?.reasoningDelta(part.id, part.text, part.providerMetadata as never));
    case 'reasoning-end':
      t.recorder?.partMetadata('reasoning', part.id, part.providerMetadata as never);
      return undefined;
    // A call or a result is written at once (message row and event): one commit each on SQLite;
    // on PostgreSQL the body is one statement (the message row's insert or update; the event is
    // appended by the bus's queue, never in this transaction), so no BEGIN/COMMIT around it.
    case 'tool-call': {
      // Called (even with an input its schema refuses): sent in full from the next step.
      t.called.add(part.toolName);
      const call = { tool_call_id: part.toolCallId, tool: part.toolName, input: part.input };
      const metadata = part.providerMetadata as never;
      return app.store.transactions.togetherWith(async () => t.recorder?.toolCall(call, metadata));
    }
    case 'tool-result': {
      const output = String(part.output ?? '');
      return app.store.transactions.togetherWith(async () =>
        t.recorder?.toolResult(part.toolCallId, part.toolName, output, false),
      );
    }
    case 'tool-error': {
      const output = errorText(part.error);
      return app.store.transactions.togetherWith(async () =>
        t.recorder?.toolResult(part.toolCallId, part.toolName, output, true),
      );
    }
    case 'finish-step':
      return finishStep(c, t, part);
    case 'error':
      t.streamError ??= part.error;
      return undefined;
    default:
      return undefined;
  }
}

/**
 * A delta that waits for its step's assistant message (the step's first, and those that come
 * while the message is being written: ./step-recorder.ts `deltaAfterMessage`) does not hold up
 * the stream: the deltas of one read all wait for the message and are recorded together once it
 * is there, in call order, so on PostgreSQL their events are one bus append where the first went
 * alone and the next waited for its answer (p-pgcritical). The stream's next part that is no
 * delta (or its end, `consumeStream`) waits for them (`recordPart`); a failure is theirs as before.
 */
function deltaWaits(t: RunTurn, recording: Promise<void> | undefined): undefined {
  if (!recording) return undefined;
  // Handled now (no unhandled rejection while no part follows); the next part throws it.
  recording.catch((error: unknown) => {
    t.deltaFailed ??= { error };
  });
  // Those waiting settle in call order (one message write): the last one settles after the others.
  t.deltas = recording;
  return undefined;
}

async function startStep(c: RunContext, t: RunTurn): Promise<void> {
  c.steps++;
  t.stepUsage = null;
  t.finishReason = undefined;
  // On PostgreSQL the step's `phase` rides in its assistant message's INSERT (./held-event.ts),
  // the preparation's writes still held (./held-writes.ts) ahead of it in that statement (p-pgprep3).
  const phase = { phase: 'model', step: c.steps };
  const prep = c.preparation;
  if (prep && c.held.holdPreparation(prep)) c.preparation = undefined;
  if (c.preparation || !c.held.hold('phase', phase)) {
    // SQLite: appended at the call, nothing to await (p-syncrepo).
    const appending = c.ledger('phase', phase);
    if (appending) await appending;
  }
  const holds = holdsCall(c.app);
  t.recorder = new StepRecorder(c.app, {
    sessionId: c.sessionId,
    runId: c.run.id,
    model: t.resolved.selector,
    provider: t.resolved.provider,
    handedOver: () => isHandOver(c.signal.reason),
    following: (then) => c.held.take(then),
    holdsCall: holds,
    holdsResult: holds && stepEndJoined(c.app),
    takeCall: () => takeCall(c.app, c.calls),
    // SVC_STEP_ONCE=0: written at its first delta, as before (p-heldstep).
    holdsText: holds && stepEndJoined(c.app) && stepOnce(),
  });
}

async function finishStep(
  c: RunContext,
  t: RunTurn,
  part: Extract<StreamPart | StepPart, { type: 'finish-step' }>,
): Promise<void> {
  const { app } = c;
  t.finishReason = part.finishReason;
  t.stepUsage = {
    input_tokens: part.usage.inputTokens ?? 0,
    output_tokens: part.usage.outputTokens ?? 0,
    reasoning_tokens: part.usage.outputTokenDetails?.reasoningTokens ?? 0,
    cached_input_tokens: part.usage.inputTokenDetails?.cacheReadTokens ?? 0,
  };
  // One transaction for the step's writes (messages, usage, ledger, bus log); none where they
  // are one statement (./step-close.ts).
  if (stepEndJoined(app) && !isHandOver(c.signal.reason)) {
    // The next model request goes out while this statement is in flight, its cancel flag checked
    // once it answered (./step-ahead.ts).
    const overlaps = 'overlaps' in part && part.overlaps === true;
    if (overlaps) takeAhead(c, t);
    await endStep(c, t, false);
    stampStepEnd(t, c.sessionId);
    const checking = overlaps ? aheadEnded(c, t) : undefined;
    if (checking) await checking;
  } else {
    // The step's model call stays out of the transaction (a rollback would take it along). No
    // async scope on SQLite (`runWith`, p-txtoken): nothing under the step end opens a transaction
    // body of its own to join it.
    await flushCalls(app, c.calls);
    await app.store.transactions.runWith(async () => endStep(c, t, false));
    stampStepEnd(t, c.sessionId);
  }
}

/** Consume one stream to its end; a step cut short is closed so the history stays valid. */
export async function consumeStream(c: RunContext, t: RunTurn, result: ReturnType<StartStream>) {
  try {
    // The own driver pushes its parts, waiting only on the recordings that answer a promise.
    if (result.drive) await result.drive((part) => recordPart(c, t, part));
    else
      for await (const part of result.fullStream) {
        const recording = recordPart(c, t, part);
        if (recording) await recording;
      }
  } catch (error) {
    if (!c.signal.aborted) t.streamError ??= error;
  }
  // Deltas the stream's last part left waiting for their message (`deltaWaits`).
  const waiting = t.deltas;
  t.deltas = undefined;
  if (waiting) await waiting.catch(() => undefined);
  if (t.deltaFailed && !c.signal.aborted) t.streamError ??= t.deltaFailed.error;
  t.deltaFailed = undefined;
  // A step cut short (cancel, loop stop, provider error) is closed so the history stays valid.
  await endStep(c, t, true);
}

function errorText(error: unknown): string {
  if (error instanceof Error) return error.message;
  if (typeof error === 'string') return error;
  return JSON.stringify(error ?? 'tool failed');
}

/** A compaction through the run's service; false when it failed (the history was not replaced). */
export async function compactCounted(
  c: RunContext,
  options: Parameters<RunContext['x']['compact']>[0],
): Promise<boolean> {
  const before = (await c.app.sessions.require(c.sessionId)).metadata.compactions;
  await c.x.compact(options);
  return (await c.app.sessions.require(c.sessionId)).metadata.compactions !== before;
}

/** Whether the context (the last step's plus the tool results it produced since) is due an auto-compaction. */
function compactionDue(t: RunTurn, lastContext: number, stepMessages: ModelMessage[]): boolean {
  const context = lastContext + freshToolTokens(stepMessages);
  return t.autoCompact && t.failedCompactions < MAX_FAILED_COMPACTIONS && context / t.window >= t.threshold;
}

/** What the messages of a request may take: under the threshold, after the system prompt. */
function messageBudget(t: RunTurn): number {
  return Math.max(
    Math.floor(t.window * t.threshold) - Math.ceil(t.system.length / 4),
    Math.floor(t.window / 4),
  );
}
