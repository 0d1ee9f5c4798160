/**
 * One agent run: the step loop. Each iteration is one model call with the AI SDK's tool calling
 * (`streamText`, tools from the funnel's effective set, executed by the SDK through the tool
 * bridge): text and reasoning deltas go onto the bus, the step is persisted as it streams, tool
 * results go back to the model on the next step. The loop stops when the model stops calling
 * tools, the step limit is reached (the last allowed step is told to answer without tools), the
 * run is cancelled, a loop is detected, or the provider fails. Between steps it checks for
 * cancellation (also a cancel asked by another process) and compacts the history when the
 * context nears the model's window.
 * @module
 */
import type { LanguageModelV3 } from '@ai-sdk/provider';
import type { LanguageModel, ModelMessage } from 'ai';
import type { App } from '../app';
import { toSvcError } from '../errors';
import type { ToolPolicy } from '../permissions/tool-policy';
import type { ResolvedModel } from '../providers/types';
import type { AgentRun, FinalRunStatus, RunUsage } from '../runs/run-ledger';
import type { Usage } from '../sessions/session-store';
import { atomically } from '../store/db';
import { type AgentKind, kindPolicies } from './agent-kinds';
import { MAX_FAILED_COMPACTIONS } from './compaction';
import { fitToBudget, freshToolTokens } from './context-fit';
import { budgetFailure, type Failure, failureLine, runFailure } from './failure';
import { historyMessages, toModelMessages } from './history';
import { createLoopDetector } from './loop-detector';
import { assembleSystemPrompt } from './prompt';
import { providerFailure, recordFailure } from './run-failure';
import { StepRecorder } from './step-recorder';
import { FINAL_STEP_NOTE, LENGTH_CONTINUATION_NOTE } from './system-prompt.prompt';
import { createToolBridge } from './tool-bridge';
import { deferredToolsBlock, exposureLevel, sentInFull } from './tool-exposure';
import type { AgentToolbox, AgentToolSpec } from './toolbox';

/** The run origin of the OpenAI-compatible surface (surfaces/http/compat): its calls bill as `compat`. */
const COMPAT_ORIGIN = 'openai_compat';

/** Who stopped the run, set by whoever aborts its controller first. */
export interface StopState {
  status?: FinalRunStatus;
  reason?: string;
  /** The classified failure when the stopper failed the run (a detected loop). */
  failure?: Failure;
}

export interface RunExecution {
  app: App;
  /** The tools, through the agent's port (tools/core/agent-toolbox.ts implements it). */
  toolbox: AgentToolbox;
  run: AgentRun;
  kind: AgentKind;
  controller: AbortController;
  stop: StopState;
  subagent: boolean;
  /** Compaction with the service's state transitions and events around it. */
  compact(options: {
    keepFromMessageId?: string;
    reason?: 'auto' | 'manual' | 'health_followon';
  }): Promise<void>;
  /**
   * The reason once after a compaction was asked for during this run (summarize_session, a
   * health follow-on), else undefined.
   */
  takeCompactionRequest(): 'manual' | 'health_followon' | undefined;
}

export interface RunOutcome {
  status: FinalRunStatus;
  reason: string | null;
  error: string | null;
  /** What failed, with the provider, the model and the next step (./failure.ts); null unless failed. */
  failure: Failure | null;
  steps: number;
  usage: RunUsage;
  cost: number;
  model: string | null;
  result_message_id: string | null;
}

export async function executeRun(x: RunExecution): Promise<RunOutcome> {
  const { app, run, kind } = x;
  const signal = x.controller.signal;
  const sessionId = run.session_id;
  const usage: RunUsage = { input_tokens: 0, output_tokens: 0, reasoning_tokens: 0, cached_input_tokens: 0 };
  let cost = 0;
  let steps = 0;
  let model: ResolvedModel | undefined;
  let resultMessageId: string | null = null;
  const ledger = (type: string, payload: Record<string, unknown> = {}) => {
    try {
      app.runs.append(run.id, type, payload);
    } catch (error) {
      app.log.warn('run ledger append failed', { run_id: run.id, type, error });
    }
  };
  const outcome = (
    status: FinalRunStatus,
    reason: string | null,
    error: string | null,
    failure: Failure | null = null,
  ): RunOutcome => ({
    status,
    reason,
    error,
    failure,
    steps,
    usage,
    cost,
    model: model?.selector ?? run.model,
    result_message_id: resultMessageId,
  });
  const stopped = (): RunOutcome =>
    outcome(
      x.stop.status ?? 'cancelled',
      x.stop.reason ?? 'cancelled',
      x.stop.status === 'failed' ? (x.stop.reason ?? null) : null,
      x.stop.status === 'failed' && x.stop.failure ? recordFailure(app, x.stop.failure, run.id) : null,
    );

  try {
    ledger('phase', { phase: 'prompt' });
    const user = app.sessions.appendMessage({
      session_id: sessionId,
      role: 'user',
      parts: [{ type: 'text', text: run.prompt }],
      run_id: run.id,
    });
    app.bus.publish(sessionId, 'message.created', {
      session_id: sessionId,
      message_id: user.id,
      role: 'user',
      run_id: run.id,
    });
    app.bus.publish(sessionId, 'message.completed', {
      session_id: sessionId,
      message_id: user.id,
      run_id: run.id,
    });
    let session = app.sessions.require(sessionId);
    if (!session.title) session = app.sessions.update(sessionId, { title: titleFromPrompt(run.prompt) });

    // [budget]: a session or day whose spend reached its limit starts no new run.
    const spent = app.telemetry.ledger.spent(sessionId);
    if (spent) {
      const failure = recordFailure(app, budgetFailure(spent), run.id);
      ledger('error', { source: 'budget', failure });
      return outcome('failed', 'budget_exceeded', failureLine(failure), failure);
    }

    model = await app.models.resolve({
      call_purpose: run.origin === COMPAT_ORIGIN ? 'compat' : x.subagent ? 'subagent' : 'agent_step',
      selector: run.model ?? undefined,
      sessionModel: session.model,
      agentModel: kind.model ?? undefined,
      sessionId,
      runId: run.id,
      signal,
    });
    const resolvedModel = model;
    atomically(
      () => app.db,
      () => {
        app.runs.update(run.id, { model: resolvedModel.selector });
        ledger('model.resolved', {
          model: resolvedModel.selector,
          source: resolvedModel.source,
          context_window: resolvedModel.info.context_window ?? null,
          context_window_source: resolvedModel.window_source ?? null,
        });
      },
    );

    const config = app.config;
    const window = model.info.context_window ?? 0;
    // An adaptive genome sets the session's own threshold (compaction_threshold).
    const threshold = app.adaptive?.compactionThreshold(sessionId) ?? config.options.compaction_threshold;
    const autoCompact = config.options.auto_compact && window > 0;
    const prior = historyMessages(app.sessions, session);
    const lastTokens = lastReportedTokens(prior);
    // Auto-compactions that failed in this run: after MAX_FAILED_COMPACTIONS the run stops trying.
    let failedCompactions = 0;
    const compactCounted = async (options: Parameters<RunExecution['compact']>[0]) => {
      const before = app.sessions.require(sessionId).metadata.compactions;
      await x.compact(options);
      if (app.sessions.require(sessionId).metadata.compactions === before) failedCompactions++;
    };
    if (autoCompact && lastTokens / window >= threshold && prior.length > 2) {
      await compactCounted({ keepFromMessageId: user.id });
    }

    const policies: ToolPolicy[] = [
      ...kindPolicies(kind, { subagent: x.subagent }),
      ...onlyTools(run.options.tools),
    ];
    // Tool exposure (src/agent/tool-exposure.ts): with many tools against the window, only the
    // core ones (and those already called in this run) travel with their schemas.
    const effective = toolsFor(x, sessionId, kind, run, policies);
    const level = exposureLevel(config.options.tool_exposure, effective, window);
    const defer = level !== 'all';
    const called = new Set<string>();
    const deferredBlock = defer
      ? deferredToolsBlock(
          effective.filter((tool) => !sentInFull(tool, level)),
          level,
        )
      : undefined;
    const prompt = await assembleSystemPrompt(app, {
      sessionId,
      kind,
      signal,
      runId: run.id,
      extra: deferredBlock ? [{ name: 'deferred_tools', source: 'tool_exposure', text: deferredBlock }] : [],
    });
    ledger('prompt.assembled', prompt.manifest);
    // Prompt assembly started the [mcp.<id>] connections; give them a bounded moment so the first
    // step already sees their tools (later steps pick up servers that connect late).
    if (Object.keys(config.mcp).length > 0) await app.mcpClients.settled({ timeoutMs: 10_000, signal });
    const ai = await import('ai');
    const history: ModelMessage[] = toModelMessages(
      historyMessages(app.sessions, app.sessions.require(sessionId)),
    );
    const maxSteps = run.options.max_steps ?? kind.max_steps ?? config.options.max_steps;
    const loop = createLoopDetector(config.options.loop_detection.max_repeats);
    // The effective set is computed again before every step (prepareStep): approve_plan, a mode
    // change, a config reload or an MCP server that connects during the run change what the next
    // step may call.
    let active = new Set(effective.map((t) => t.name));
    const bridge = createToolBridge({
      app,
      toolbox: x.toolbox,
      sessionId,
      runId: run.id,
      agent: kind.id,
      signal,
      permission: { yolo: run.options.yolo, unattended: run.options.unattended },
      isActive: (name) => active.has(name),
      beforeCall(call) {
        called.add(call.tool);
        atomically(
          () => app.db,
          () => recorder?.toolCall(call),
        );
      },
      onResult(call) {
        const verdict = loop.record(call.tool, call.input, call.output);
        if (!verdict || signal.aborted) return;
        x.stop.status ??= 'failed';
        x.stop.reason ??= `loop detected: ${verdict.tool} was called ${verdict.repeats} times in a row with the same input and the same result; the run was stopped`;
        x.stop.failure ??= runFailure('loop_detected', {
          model: model?.selector,
          message: x.stop.reason,
          tool: verdict.tool,
          repeats: verdict.repeats,
        });
        app.bus.publish(sessionId, 'loop.detected', {
          session_id: sessionId,
          run_id: run.id,
          tool: verdict.tool,
          repeats: verdict.repeats,
        });
        ledger('loop.detected', { tool: verdict.tool, repeats: verdict.repeats });
        x.controller.abort(new Error('loop detected'));
      },
    });
    const providerOptions = providerOptionsFor(model, session.reasoning_effort ?? kind.reasoning_effort);
    const resolved = model;
    // Deferred exposure: the request carries the core tools and those called in this run; every
    // effective tool stays callable (the SDK parses calls against the whole active set).
    const sendsInFull = (name: string) => {
      if (called.has(name)) return true;
      const tool = x.toolbox.get(name);
      return tool ? sentInFull(tool, level) : true;
    };
    const exposing = (sdk: typeof ai, inner: LanguageModel) =>
      sdk.wrapLanguageModel({
        model: inner as LanguageModelV3,
        middleware: {
          specificationVersion: 'v3',
          transformParams: async ({ params }) =>
            params.tools
              ? { ...params, tools: params.tools.filter((t) => t.type !== 'function' || sendsInFull(t.name)) }
              : params,
        },
      });
    // After a compaction inside a stream, every later step sends the summary instead of the
    // messages before `cut` (the SDK keeps accumulating its own list).
    let compacted: { prefix: ModelMessage[]; cut: number } | undefined;
    let lastContext = 0;
    // What the messages of a request may take: under the threshold, after the system prompt.
    const messageBudget = Math.max(
      Math.floor(window * threshold) - Math.ceil(prompt.system.length / 4),
      Math.floor(window / 4),
    );
    const recovery = config.options.length_recovery;
    const maxRecoveries = recovery.enabled ? recovery.max_attempts : 0;
    let recoveries = 0;

    // One streamText call drives every step (the AI SDK's multi-step tool calling): the history is
    // validated once, and prepareStep adjusts each step (tool set, last-step note, compaction).
    // A step cut by the output token limit ends the stream; length recovery starts another one
    // from the stored history plus a continuation note (not stored).
    const startStream = (messages: ModelMessage[], stepsBefore: number) =>
      ai.streamText({
        model: defer ? exposing(ai, resolved.language_model) : resolved.language_model,
        system: prompt.system,
        messages,
        tools: bridge.toolSet(ai, x.toolbox.registered()),
        experimental_context: bridge.context,
        activeTools: [...active],
        stopWhen: ai.stepCountIs(maxSteps - stepsBefore),
        abortSignal: signal,
        maxRetries: 2,
        ...(resolved.info.max_output ? { maxOutputTokens: resolved.info.max_output } : {}),
        ...(providerOptions ? { providerOptions } : {}),
        prepareStep: async ({ stepNumber, messages: stepMessages }) => {
          const step = stepsBefore + stepNumber;
          if (step > 0) {
            if (app.runs.cancelRequested(run.id)) {
              x.stop.status ??= 'cancelled';
              x.stop.reason ??= 'cancelled (requested through the run ledger)';
              x.controller.abort(new Error('cancelled'));
            }
            const requested = x.takeCompactionRequest();
            // The last step's reported context plus the tool results it produced since.
            const context = lastContext + freshToolTokens(stepMessages);
            const auto =
              autoCompact && failedCompactions < MAX_FAILED_COMPACTIONS && context / window >= threshold;
            if (!signal.aborted && (requested || auto)) {
              await compactCounted({ reason: requested ?? 'auto' });
              compacted = {
                prefix: toModelMessages(historyMessages(app.sessions, app.sessions.require(sessionId))),
                cut: stepMessages.length,
              };
            }
          }
          active = new Set(toolsFor(x, sessionId, kind, run, policies).map((t) => t.name));
          const final = step === maxSteps - 1;
          // A window already overflowing (a huge tool result, a long history): the largest tool
          // outputs are cut in the request (not in the store) so it fits (./context-fit.ts).
          const outgoing = compacted
            ? [...compacted.prefix, ...stepMessages.slice(compacted.cut)]
            : stepMessages;
          const fitted =
            window > 0 ? fitToBudget(outgoing, messageBudget) : { messages: outgoing, trimmed: 0 };
          if (fitted.trimmed > 0) ledger('context.trimmed', { step: steps, characters: fitted.trimmed });
          return {
            activeTools: [...active],
            ...(final
              ? { toolChoice: 'none' as const, system: `${prompt.system}\n\n${FINAL_STEP_NOTE}` }
              : {}),
            ...(compacted || fitted.trimmed > 0 ? { messages: fitted.messages } : {}),
          };
        },
        // Errors arrive as stream parts; the SDK's default handler would print to the console.
        onError: () => {},
      });

    let recorder: StepRecorder | undefined;
    let stepUsage: Usage | null = null;
    let finishReason: string | undefined;
    let streamError: unknown;
    const endStep = (interrupted: boolean) => {
      if (!recorder) return;
      if (interrupted) recorder.closeDanglingCalls();
      const stepCost = stepUsage
        ? (stepUsage.input_tokens * (resolved.info.cost_per_1m_in ?? 0) +
            stepUsage.output_tokens * (resolved.info.cost_per_1m_out ?? 0)) /
          1e6
        : 0;
      recorder.finish(stepUsage, stepCost);
      if (recorder.text.trim()) resultMessageId = recorder.assistantId ?? resultMessageId;
      if (stepUsage) {
        usage.input_tokens += stepUsage.input_tokens;
        usage.output_tokens += stepUsage.output_tokens;
        usage.reasoning_tokens += stepUsage.reasoning_tokens ?? 0;
        usage.cached_input_tokens += stepUsage.cached_input_tokens ?? 0;
        cost += stepCost;
        app.sessions.addUsage(sessionId, {
          input_tokens: stepUsage.input_tokens,
          output_tokens: stepUsage.output_tokens,
          cost: stepCost,
        });
        lastContext = stepUsage.input_tokens + stepUsage.output_tokens;
        app.bus.publish(sessionId, 'context.usage', {
          session_id: sessionId,
          run_id: run.id,
          input_tokens: lastContext,
          context_window: window,
          ratio: window > 0 ? round(lastContext / window) : 0,
        });
      }
      app.runs.update(run.id, { steps, usage, cost });
      ledger('step.finished', {
        step: steps,
        finish_reason: finishReason ?? null,
        tool_calls: recorder.toolCalls.length,
        usage: stepUsage,
        cost: stepCost,
      });
      lastToolCalls = recorder.toolCalls.length;
      recorder = undefined;
    };
    let lastToolCalls = 0;
    const consume = async (result: ReturnType<typeof startStream>) => {
      try {
        for await (const part of result.fullStream) {
          switch (part.type) {
            case 'start-step':
              steps++;
              stepUsage = null;
              finishReason = undefined;
              ledger('phase', { phase: 'model', step: steps });
              recorder = new StepRecorder(app, {
                sessionId,
                runId: run.id,
                model: resolved.selector,
                provider: resolved.provider,
              });
              break;
            case 'text-delta':
              recorder?.textDelta(part.id, part.text, part.providerMetadata as never);
              break;
            case 'text-end':
              recorder?.partMetadata('text', part.id, part.providerMetadata as never);
              break;
            case 'reasoning-delta':
              recorder?.reasoningDelta(part.id, part.text, part.providerMetadata as never);
              break;
            case 'reasoning-end':
              recorder?.partMetadata('reasoning', part.id, part.providerMetadata as never);
              break;
            // A call or a result is written at once (message row and event): one commit each.
            case 'tool-call': {
              // Called (even with an input its schema refuses): sent in full from the next step.
              called.add(part.toolName);
              const call = { tool_call_id: part.toolCallId, tool: part.toolName, input: part.input };
              const metadata = part.providerMetadata as never;
              atomically(
                () => app.db,
                () => recorder?.toolCall(call, metadata),
              );
              break;
            }
            case 'tool-result': {
              const output = String(part.output ?? '');
              atomically(
                () => app.db,
                () => recorder?.toolResult(part.toolCallId, part.toolName, output, false),
              );
              break;
            }
            case 'tool-error': {
              const output = errorText(part.error);
              atomically(
                () => app.db,
                () => recorder?.toolResult(part.toolCallId, part.toolName, output, true),
              );
              break;
            }
            case 'finish-step':
              finishReason = part.finishReason;
              stepUsage = {
                input_tokens: part.usage.inputTokens ?? 0,
                output_tokens: part.usage.outputTokens ?? 0,
                reasoning_tokens: part.usage.outputTokenDetails?.reasoningTokens ?? 0,
                cached_input_tokens: part.usage.inputTokenDetails?.cacheReadTokens ?? 0,
              };
              // One transaction for the step's writes (messages, usage, ledger, bus log).
              atomically(
                () => app.db,
                () => endStep(false),
              );
              break;
            case 'error':
              streamError ??= part.error;
              break;
            default:
              break;
          }
        }
      } catch (error) {
        if (!signal.aborted) streamError ??= error;
      }
      // A step cut short (cancel, loop stop, provider error) is closed so the history stays valid.
      endStep(true);
    };

    await consume(startStream(history, 0));
    while (
      finishReason === 'length' &&
      recoveries < maxRecoveries &&
      steps < maxSteps &&
      !signal.aborted &&
      streamError === undefined
    ) {
      recoveries++;
      ledger('length_recovery', {
        attempt: recoveries,
        max_attempts: maxRecoveries,
        step: steps,
        output_tokens: (stepUsage as Usage | null)?.output_tokens ?? null,
      });
      compacted = undefined;
      const stored = toModelMessages(historyMessages(app.sessions, app.sessions.require(sessionId)));
      await consume(startStream([...stored, { role: 'user', content: LENGTH_CONTINUATION_NOTE }], steps));
    }

    if (signal.aborted) return stopped();
    const limit = `max_steps: the step limit (${maxSteps}) was reached before the model finished`;
    const limited = () =>
      outcome(
        'failed',
        limit,
        limit,
        recordFailure(
          app,
          runFailure('step_limit', { model: model?.selector, message: limit, maxSteps }),
          run.id,
        ),
      );
    if (isToolChoiceViolation(streamError)) return limited();
    if (streamError !== undefined) {
      const { failure, message } = providerFailure(app, model, streamError, run.id);
      ledger('error', { source: 'provider', message, failure });
      return outcome('failed', 'provider_error', message, failure);
    }
    if (finishReason === 'tool-calls' && lastToolCalls > 0) return limited();
    const reason = finishReason === 'length' ? 'length: the model reached its output token limit' : null;
    return outcome('completed', reason, null);
  } catch (error) {
    if (signal.aborted) return stopped();
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
    ledger('error', { source: model ? 'run' : 'model_resolution', code: e.code, message, failure });
    return outcome('failed', unavailable ? 'model_unavailable' : 'error', message, failure);
  }
}

function toolsFor(
  x: RunExecution,
  sessionId: string,
  kind: AgentKind,
  run: AgentRun,
  policies: ToolPolicy[],
): AgentToolSpec[] {
  return x.toolbox.effective(
    x.app.funnelContext(sessionId, { agent: kind.id, yolo: run.options.yolo, policies }),
  );
}

function onlyTools(names: string[] | undefined): ToolPolicy[] {
  if (!names?.length) return [];
  const allowed = new Set(names);
  return [
    {
      source: 'sub-agent task',
      removes: (tool) => (allowed.has(tool.name) ? undefined : 'not in the task tool list'),
    },
  ];
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

function errorText(error: unknown): string {
  if (error instanceof Error) return error.message;
  if (typeof error === 'string') return error;
  return JSON.stringify(error ?? 'tool failed');
}

export function titleFromPrompt(prompt: string): string {
  const line = prompt.trim().split('\n')[0].replace(/\s+/g, ' ');
  return line.length > 60 ? `${line.slice(0, 59)}…` : line || 'untitled';
}

const round = (n: number) => Math.round(n * 10_000) / 10_000;

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
