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
import type { ModelMessage } from 'ai';
import type { App } from '../app';
import { toSvcError } from '../errors';
import type { ResolvedModel } from '../providers/types';
import type { AgentRun, FinalRunStatus, RunUsage } from '../runs/run-ledger';
import type { Usage } from '../sessions/session-store';
import type { AnyTool } from '../tools/define-tool';
import { effectiveTools, type ToolPolicy } from '../tools/funnel';
import { type AgentKind, kindPolicies } from './agent-kinds';
import { historyMessages, toModelMessages } from './history';
import { createLoopDetector } from './loop-detector';
import { assembleSystemPrompt } from './prompt';
import { StepRecorder } from './step-recorder';
import { FINAL_STEP_NOTE } from './system-prompt.prompt';
import { createToolBridge } from './tool-bridge';

/** Who stopped the run, set by whoever aborts its controller first. */
export interface StopState {
  status?: FinalRunStatus;
  reason?: string;
}

export interface RunExecution {
  app: App;
  run: AgentRun;
  kind: AgentKind;
  controller: AbortController;
  stop: StopState;
  subagent: boolean;
  /** Compaction with the service's state transitions and events around it. */
  compact(options: { keepFromMessageId?: string; reason?: 'auto' | 'manual' }): Promise<void>;
  /** True once after summarize_session asked for a compaction during this run. */
  takeCompactionRequest(): boolean;
}

export interface RunOutcome {
  status: FinalRunStatus;
  reason: string | null;
  error: string | null;
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
  const outcome = (status: FinalRunStatus, reason: string | null, error: string | null): RunOutcome => ({
    status,
    reason,
    error,
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

    model = await app.models.resolve({
      selector: run.model ?? undefined,
      sessionModel: session.model,
      agentModel: kind.model ?? undefined,
    });
    app.runs.update(run.id, { model: model.selector });
    ledger('model.resolved', {
      model: model.selector,
      source: model.source,
      context_window: model.info.context_window ?? null,
    });

    const config = app.config;
    const window = model.info.context_window ?? 0;
    const threshold = config.options.compaction_threshold;
    const autoCompact = config.options.auto_compact && window > 0;
    const prior = historyMessages(app.sessions, session);
    const lastTokens = lastReportedTokens(prior);
    if (autoCompact && lastTokens / window >= threshold && prior.length > 2) {
      await x.compact({ keepFromMessageId: user.id });
    }

    const prompt = await assembleSystemPrompt(app, { sessionId, kind, signal });
    ledger('prompt.assembled', prompt.manifest);
    const ai = await import('ai');
    let history: ModelMessage[] = toModelMessages(
      historyMessages(app.sessions, app.sessions.require(sessionId)),
    );
    const maxSteps = run.options.max_steps ?? kind.max_steps ?? config.options.max_steps;
    const loop = createLoopDetector(config.options.loop_detection.max_repeats);
    const bridge = createToolBridge({
      app,
      sessionId,
      runId: run.id,
      agent: kind.id,
      signal,
      permission: { yolo: run.options.yolo, unattended: run.options.unattended },
      onResult(call) {
        const verdict = loop.record(call.tool, call.input, call.output);
        if (!verdict || signal.aborted) return;
        x.stop.status ??= 'failed';
        x.stop.reason ??= `loop detected: ${verdict.tool} was called ${verdict.repeats} times in a row with the same input and the same result; the run was stopped`;
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
    const policies: ToolPolicy[] = [
      ...kindPolicies(kind, { subagent: x.subagent }),
      ...onlyTools(run.options.tools),
    ];
    const providerOptions = providerOptionsFor(model, session.reasoning_effort ?? kind.reasoning_effort);

    for (let step = 1; ; step++) {
      if (signal.aborted) return stopped();
      const final = step === maxSteps;
      const tools = toolsFor(app, sessionId, kind, run, policies);
      ledger('phase', { phase: 'model', step });
      const recorder = new StepRecorder(app, {
        sessionId,
        runId: run.id,
        model: model.selector,
        provider: model.provider,
      });
      const result = ai.streamText({
        model: model.language_model,
        system: final ? `${prompt.system}\n\n${FINAL_STEP_NOTE}` : prompt.system,
        messages: history,
        tools: bridge.toolSet(ai, tools),
        toolChoice: final ? 'none' : 'auto',
        stopWhen: ai.stepCountIs(1),
        abortSignal: signal,
        maxRetries: 2,
        ...(model.info.max_output ? { maxOutputTokens: model.info.max_output } : {}),
        ...(providerOptions ? { providerOptions } : {}),
        // Errors arrive as stream parts; the SDK's default handler would print to the console.
        onError: () => {},
      });
      let finishReason: string | undefined;
      let stepUsage: Usage | null = null;
      let streamError: unknown;
      try {
        for await (const part of result.fullStream) {
          switch (part.type) {
            case 'text-delta':
              recorder.textDelta(part.id, part.text, part.providerMetadata as never);
              break;
            case 'text-end':
              recorder.partMetadata('text', part.id, part.providerMetadata as never);
              break;
            case 'reasoning-delta':
              recorder.reasoningDelta(part.id, part.text, part.providerMetadata as never);
              break;
            case 'reasoning-end':
              recorder.partMetadata('reasoning', part.id, part.providerMetadata as never);
              break;
            case 'tool-call':
              recorder.toolCall(
                { tool_call_id: part.toolCallId, tool: part.toolName, input: part.input },
                part.providerMetadata as never,
              );
              break;
            case 'tool-result':
              recorder.toolResult(part.toolCallId, part.toolName, String(part.output ?? ''), false);
              break;
            case 'tool-error':
              recorder.toolResult(part.toolCallId, part.toolName, errorText(part.error), true);
              break;
            case 'finish-step':
              finishReason = part.finishReason;
              stepUsage = {
                input_tokens: part.usage.inputTokens ?? 0,
                output_tokens: part.usage.outputTokens ?? 0,
                reasoning_tokens: part.usage.outputTokenDetails?.reasoningTokens ?? 0,
                cached_input_tokens: part.usage.inputTokenDetails?.cacheReadTokens ?? 0,
              };
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
      steps = step;
      const interrupted = signal.aborted || streamError !== undefined;
      if (interrupted) recorder.closeDanglingCalls();
      const stepCost = stepUsage
        ? (stepUsage.input_tokens * (model.info.cost_per_1m_in ?? 0) +
            stepUsage.output_tokens * (model.info.cost_per_1m_out ?? 0)) /
          1e6
        : 0;
      recorder.finish(stepUsage, stepCost);
      if (recorder.text.trim()) resultMessageId = recorder.assistantId ?? resultMessageId;
      history = [...history, ...toModelMessages(recorder.messages())];
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
      }
      app.runs.update(run.id, { steps, usage, cost });
      const contextUsed = stepUsage ? stepUsage.input_tokens + stepUsage.output_tokens : 0;
      if (stepUsage) {
        app.bus.publish(sessionId, 'context.usage', {
          session_id: sessionId,
          run_id: run.id,
          input_tokens: contextUsed,
          context_window: window,
          ratio: window > 0 ? round(contextUsed / window) : 0,
        });
      }
      ledger('step.finished', {
        step,
        finish_reason: finishReason ?? null,
        tool_calls: recorder.toolCalls.length,
        usage: stepUsage,
        cost: stepCost,
      });

      if (signal.aborted) return stopped();
      if (
        final &&
        (isToolChoiceViolation(streamError) || (finishReason === 'tool-calls' && recorder.toolCalls.length))
      ) {
        const reason = `max_steps: the step limit (${maxSteps}) was reached before the model finished`;
        return outcome('failed', reason, reason);
      }
      if (streamError !== undefined) {
        const message = providerErrorMessage(app, streamError);
        ledger('error', { source: 'provider', message });
        return outcome('failed', 'provider_error', message);
      }
      if (finishReason !== 'tool-calls' || recorder.toolCalls.length === 0) {
        const reason = finishReason === 'length' ? 'length: the model reached its output token limit' : null;
        return outcome('completed', reason, null);
      }
      if (app.runs.cancelRequested(run.id)) {
        x.stop.status ??= 'cancelled';
        x.stop.reason ??= 'cancelled (requested through the run ledger)';
        return stopped();
      }
      const requested = x.takeCompactionRequest();
      if (requested || (autoCompact && contextUsed / window >= threshold)) {
        await x.compact({ reason: requested ? 'manual' : 'auto' });
        history = toModelMessages(historyMessages(app.sessions, app.sessions.require(sessionId)));
      }
    }
  } catch (error) {
    if (signal.aborted) return stopped();
    const e = toSvcError(error);
    if (e.code === 'internal') app.log.error('run failed', { run_id: run.id, error: e.cause ?? e });
    const message = app.redactor.string(e.message);
    ledger('error', { source: model ? 'run' : 'model_resolution', code: e.code, message });
    return outcome('failed', e.code === 'config_error' || !model ? 'model_unavailable' : 'error', message);
  }
}

function toolsFor(
  app: App,
  sessionId: string,
  kind: AgentKind,
  run: AgentRun,
  policies: ToolPolicy[],
): AnyTool[] {
  return effectiveTools(
    app.tools,
    app.config,
    app.funnelContext(sessionId, { agent: kind.id, yolo: run.options.yolo, policies }),
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

function providerErrorMessage(app: App, error: unknown): string {
  const e = error as { message?: string; statusCode?: number; responseBody?: string };
  const status = typeof e?.statusCode === 'number' ? ` (HTTP ${e.statusCode})` : '';
  const message = (e?.message ?? String(error)).slice(0, 500);
  return app.redactor.string(`provider error${status}: ${message}`);
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
