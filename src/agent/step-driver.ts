/**
 * svc's own step driver: the steps of a run driven by calling the resolved model's `doStream`
 * directly, in place of the AI SDK's `streamText` (kept behind `SVC_STEP_DRIVER=sdk`). It does
 * what `streamText` does for svc's runs — the prompt's conversion, the step's tools, the per-step
 * preparation, the tool calls' parsing (an unknown tool or an unparsable input is a tool error
 * the model reads), their execution through the tool's `execute` with `experimental_context`,
 * the step's usage and finish reason, the last step's tool-choice check, retries of the call, the
 * step limit and abort — without its per-step web streams, its re-validation of the prompt, and
 * its conversion of the whole history on every step: the history is converted once, each step
 * adds its own two messages, and the step's tool list is built once per set of active tools.
 * It yields the same parts `streamText`'s `fullStream` does for what the run records
 * (./run-stream.ts `recordPart`).
 * @module
 */
import {
  JSONParseError,
  type LanguageModelV3,
  type LanguageModelV3CallOptions,
  type LanguageModelV3StreamPart,
  type LanguageModelV3StreamResult,
  type SharedV3ProviderMetadata,
} from '@ai-sdk/provider';
import type { LanguageModelUsage, ModelMessage, ToolSet } from 'ai';
import { partsOf } from '../providers/stream-parts';
import { PromptCache, requestTools, type StepRequestSource, sdkInternal } from './step-request';

type Internal = typeof import('ai/internal');
type Ai = typeof import('ai');

/** What the run's preparation decides for one step (the subset of `prepareStep`'s result svc uses). */
export interface StepSettings {
  activeTools?: string[];
  toolChoice?: 'none';
  system?: string;
  messages?: ModelMessage[];
}

/** A part of the driven steps: the shapes of `streamText`'s `fullStream` parts the run records. */
export type StepPart =
  | { type: 'start-step' }
  | {
      type: 'text-delta' | 'reasoning-delta';
      id: string;
      text: string;
      providerMetadata?: SharedV3ProviderMetadata;
    }
  | { type: 'text-end' | 'reasoning-end'; id: string; providerMetadata?: SharedV3ProviderMetadata }
  | {
      type: 'tool-call';
      toolCallId: string;
      toolName: string;
      input: unknown;
      providerMetadata?: SharedV3ProviderMetadata;
      invalid?: boolean;
    }
  | { type: 'tool-result'; toolCallId: string; toolName: string; input: unknown; output: unknown }
  | { type: 'tool-error'; toolCallId: string; toolName: string; input: unknown; error: unknown }
  | { type: 'finish-step'; finishReason: string; usage: LanguageModelUsage }
  | { type: 'finish'; finishReason: string }
  | { type: 'error'; error: unknown };

export interface StepDriverOptions extends Pick<StepRequestSource, 'sendsTool' | 'calledTools'> {
  ai: Ai;
  model: LanguageModelV3;
  system: string;
  messages: ModelMessage[];
  /** The run's tool set (shared across runs with the same tools, ./tool-bridge.ts). */
  tools: ToolSet;
  /** Handed to every tool's `execute` (the run's tool bridge). */
  context: unknown;
  /** Steps this stream may take. */
  maxSteps: number;
  signal: AbortSignal;
  maxRetries: number;
  maxOutputTokens?: number;
  providerOptions?: LanguageModelV3CallOptions['providerOptions'];
  /** The run's preparation of each step. */
  prepareStep(stepNumber: number, messages: ModelMessage[]): Promise<StepSettings>;
}

/** The options with the SDK's internal helpers (`ai/internal`: prompt conversion, tools, retries, usage). */
interface Driver extends StepDriverOptions {
  internal: Internal;
}

/** The driven steps, read like `streamText`'s result. */
export function driveSteps(o: StepDriverOptions): { fullStream: AsyncIterable<StepPart> } {
  return { fullStream: steps(o) };
}

interface ParsedCall {
  toolCallId: string;
  toolName: string;
  input: unknown;
  providerMetadata?: SharedV3ProviderMetadata;
  /** Why the call cannot run (an unknown tool, an input that does not parse). */
  error?: unknown;
}

/** A text or reasoning part of the step's content. */
type ContentText = { type: 'text' | 'reasoning'; text: string; providerOptions?: SharedV3ProviderMetadata };

/** What one model call produced. */
interface StepOutcome {
  calls: ParsedCall[];
  /** The error results of the invalid calls (yielded with their calls). */
  invalid: CallResult[];
  content: Array<
    | ContentText
    | {
        type: 'tool-call';
        toolCallId: string;
        toolName: string;
        input: unknown;
        providerOptions?: SharedV3ProviderMetadata;
      }
  >;
  finishReason: string;
  usage: LanguageModelUsage | undefined;
  terminal: boolean;
  output: boolean;
}

async function* steps(options: StepDriverOptions): AsyncGenerator<StepPart> {
  let o: Driver;
  try {
    o = { ...options, internal: await sdkInternal() };
  } catch (error) {
    yield { type: 'error', error };
    return;
  }
  const { signal } = o;
  const { retry } = o.internal.prepareRetries({ maxRetries: o.maxRetries, abortSignal: signal });
  const stepMessages: ModelMessage[] = [...o.messages];
  const prompt = new PromptCache(o, stepMessages);
  // At least one step (as streamText: a stream is started to take one).
  const maxSteps = Math.max(1, o.maxSteps);
  for (let stepNumber = 0; stepNumber < maxSteps; stepNumber++) {
    let outcome: StepOutcome | undefined;
    try {
      const settings = await o.prepareStep(stepNumber, stepMessages);
      if (signal.aborted) return;
      const active = activeSet(o.tools, settings.activeTools);
      const tools = await requestTools(o, active);
      const none = settings.toolChoice === 'none';
      // As the SDK: no tools, no tool choice (but for `none`).
      const toolChoice = none ? { type: 'none' as const } : tools ? { type: 'auto' as const } : undefined;
      const call: LanguageModelV3CallOptions = {
        prompt: await prompt.for(settings.system ?? o.system, settings.messages),
        tools,
        toolChoice,
        abortSignal: signal,
        ...(o.maxOutputTokens ? { maxOutputTokens: o.maxOutputTokens } : {}),
        ...(o.providerOptions ? { providerOptions: o.providerOptions } : {}),
      };
      const result = await retry(() => o.model.doStream(call));
      outcome = yield* readStep(o, result, active, none);
    } catch (error) {
      if (signal.aborted) return;
      yield { type: 'error', error };
      return;
    }
    if (signal.aborted) return;
    if (!outcome.terminal && !outcome.output) {
      yield { type: 'error', error: new o.ai.NoOutputGeneratedError({ message: NO_OUTPUT }) };
      return;
    }
    // Calls run once the model's answer is complete, when it ended normally (as in streamText).
    const runs = outcome.finishReason === 'stop' || outcome.finishReason === 'tool-calls';
    const results = [...outcome.invalid, ...(yield* runCalls(o, outcome.calls, stepMessages, runs))];
    if (signal.aborted) return;
    yield { type: 'finish-step', finishReason: outcome.finishReason, usage: outcome.usage ?? NO_USAGE };
    const executed = outcome.calls.length > 0 && results.length === outcome.calls.length;
    if (!executed || stepNumber + 1 >= maxSteps) {
      yield { type: 'finish', finishReason: outcome.finishReason };
      return;
    }
    stepMessages.push(...responseMessages(outcome, results));
  }
}

const NO_OUTPUT = 'No output generated. The model stream ended without a finish chunk.';
const NO_USAGE: LanguageModelUsage = {
  inputTokens: undefined,
  outputTokens: undefined,
  totalTokens: undefined,
  inputTokenDetails: { noCacheTokens: undefined, cacheReadTokens: undefined, cacheWriteTokens: undefined },
  outputTokenDetails: { textTokens: undefined, reasoningTokens: undefined },
};

/** The step's callable tools: the active ones (every tool when the step names none). */
function activeSet(tools: ToolSet, active: string[] | undefined): ReadonlySet<string> | undefined {
  if (!active) return undefined;
  // The run's preparation hands the same list for the same tools (./active-tools.ts
  // `activeNames`): one Set per list and tool set, so requestTools knows it again by identity.
  const known = activeSets.get(active);
  if (known?.tools === tools) return known.set;
  const set: ReadonlySet<string> = new Set(active.filter((name) => name in tools));
  activeSets.set(active, { tools, set });
  return set;
}
const activeSets = new WeakMap<string[], { tools: ToolSet; set: ReadonlySet<string> }>();

/** One model call's stream read to its end, its parts yielded as they arrive. */
async function* readStep(
  o: Driver,
  result: LanguageModelV3StreamResult,
  active: ReadonlySet<string> | undefined,
  withholdCalls: boolean,
): AsyncGenerator<StepPart, StepOutcome> {
  const out: StepOutcome = {
    invalid: [],
    calls: [],
    content: [],
    finishReason: 'other',
    usage: undefined,
    terminal: false,
    output: false,
  };
  // The open text and reasoning parts by the provider's id, with the id the run sees: unique in
  // the step (a provider may reuse an id for a later part; the SDK gives that one a new id too).
  const open = new Map<string, { id: string; part: ContentText }>();
  /** The open part a delta or end chunk belongs to; an end chunk closes it. */
  const openPart = (kind: 'text' | 'reasoning', chunk: { id: string }, close = false) => {
    const key = `${kind}:${chunk.id}`;
    const entry = open.get(key);
    if (close) open.delete(key);
    return entry;
  };
  const used = new Set<string>();
  const withheld: unknown[] = [];
  let started = false;
  let ended = false;
  const parts = partsOf(result);
  try {
    for (;;) {
      const { done, value: chunk } = await parts.next();
      if (done) {
        ended = true;
        break;
      }
      if (chunk.type === 'stream-start') continue;
      if (!started) {
        started = true;
        yield { type: 'start-step' };
      }
      switch (chunk.type) {
        case 'text-start':
        case 'reasoning-start': {
          out.output = true;
          const kind = chunk.type === 'text-start' ? 'text' : 'reasoning';
          const part: ContentText = {
            type: kind,
            text: '',
            ...(chunk.providerMetadata ? { providerOptions: chunk.providerMetadata } : {}),
          };
          let id = `${kind}:${chunk.id}`;
          for (let n = 1; used.has(id); n++) id = `${kind}:${chunk.id}-${n}`;
          used.add(id);
          open.set(`${kind}:${chunk.id}`, { id: id.slice(kind.length + 1), part });
          out.content.push(part);
          break;
        }
        case 'text-delta':
        case 'reasoning-delta': {
          out.output = true;
          const kind = chunk.type === 'text-delta' ? 'text' : 'reasoning';
          const entry = openPart(kind, chunk);
          if (entry) {
            entry.part.text += chunk.delta;
            if (chunk.providerMetadata) entry.part.providerOptions = chunk.providerMetadata;
          }
          if (kind === 'text' && chunk.delta.length === 0 && chunk.providerMetadata == null) break;
          yield {
            type: chunk.type,
            id: entry?.id ?? chunk.id,
            text: chunk.delta,
            providerMetadata: chunk.providerMetadata,
          };
          break;
        }
        case 'text-end':
        case 'reasoning-end': {
          out.output = true;
          const kind = chunk.type === 'text-end' ? 'text' : 'reasoning';
          const entry = openPart(kind, chunk, true);
          if (entry && chunk.providerMetadata) entry.part.providerOptions = chunk.providerMetadata;
          yield { type: chunk.type, id: entry?.id ?? chunk.id, providerMetadata: chunk.providerMetadata };
          break;
        }
        case 'tool-call': {
          out.output = true;
          if (withholdCalls) {
            withheld.push(chunk);
            break;
          }
          yield* callParts(o, chunk, active, out);
          break;
        }
        case 'finish': {
          out.terminal = true;
          out.usage = o.internal.asLanguageModelUsage(chunk.usage);
          out.finishReason = chunk.finishReason.unified;
          if (withheld.length > 0) {
            out.finishReason = 'error';
            yield { type: 'error', error: violation(o, chunk.finishReason.unified, withheld) };
          }
          break;
        }
        case 'error':
          out.terminal = true;
          out.finishReason = 'error';
          yield { type: 'error', error: chunk.error };
          break;
        case 'tool-input-start':
        case 'tool-input-delta':
        case 'tool-input-end':
        case 'file':
        case 'source':
          out.output = true;
          break;
        default:
          break;
      }
    }
  } finally {
    // Left early (the reader stopped, an error): the model's stream is cancelled, not left open.
    if (!ended) parts.return?.().catch(() => {});
  }
  return out;
}

/** A tool call of the step: recorded in its outcome, yielded, with its error result when invalid. */
function* callParts(
  o: Driver,
  chunk: Extract<LanguageModelV3StreamPart, { type: 'tool-call' }>,
  active: ReadonlySet<string> | undefined,
  out: StepOutcome,
): Generator<StepPart> {
  const call = parseCall(o, chunk, active);
  out.calls.push(call);
  out.content.push({
    type: 'tool-call',
    toolCallId: call.toolCallId,
    toolName: call.toolName,
    input: call.error && (typeof call.input !== 'object' || call.input === null) ? {} : call.input,
    ...(call.providerMetadata ? { providerOptions: call.providerMetadata } : {}),
  });
  yield {
    type: 'tool-call',
    toolCallId: call.toolCallId,
    toolName: call.toolName,
    input: call.input,
    providerMetadata: call.providerMetadata,
    ...(call.error ? { invalid: true } : {}),
  };
  // An invalid call's error result comes at once (the SDK's tool results stream).
  if (call.error) {
    const error = errorMessage(call.error);
    out.invalid.push({ type: 'tool-error', call, error });
    yield {
      type: 'tool-error',
      toolCallId: call.toolCallId,
      toolName: call.toolName,
      input: call.input,
      error,
    };
  }
}

/** The model called a tool on a step told to answer without tools (the SDK's error, its name kept). */
function violation(o: Driver, finishReason: string, content: unknown[]) {
  return new o.ai.ToolChoiceViolationError({
    toolChoice: { type: 'none' },
    finishReason: finishReason as never,
    provider: o.model.provider,
    modelId: o.model.modelId,
    content: content as never,
  });
}

/** A call checked against the step's tools and its input parsed (as the SDK's parseToolCall). */
function parseCall(
  o: Driver,
  chunk: Extract<LanguageModelV3StreamPart, { type: 'tool-call' }>,
  active: ReadonlySet<string> | undefined,
): ParsedCall {
  const base = {
    toolCallId: chunk.toolCallId,
    toolName: chunk.toolName,
    ...(chunk.providerMetadata ? { providerMetadata: chunk.providerMetadata } : {}),
  };
  const text = chunk.input;
  let input: unknown = text;
  let cause: unknown;
  try {
    input = text.trim() === '' ? {} : JSON.parse(text);
  } catch (error) {
    cause = error;
  }
  if (!(chunk.toolName in o.tools) || (active && !active.has(chunk.toolName)))
    return { ...base, input, error: noSuchTool(o, chunk.toolName, active) };
  if (cause === undefined) return { ...base, input };
  const error = new o.ai.InvalidToolInputError({
    toolName: chunk.toolName,
    toolInput: text,
    cause: new JSONParseError({ text, cause }),
  });
  return { ...base, input, error };
}

function noSuchTool(o: Driver, toolName: string, active: ReadonlySet<string> | undefined) {
  return new o.ai.NoSuchToolError({ toolName, availableTools: active ? [...active] : Object.keys(o.tools) });
}

type CallResult =
  | { type: 'tool-result'; call: ParsedCall; output: unknown }
  | { type: 'tool-error'; call: ParsedCall; error: unknown };

/**
 * The step's valid calls, when the step ended normally: they start together (the run's tool
 * bridge orders them) and their results are yielded as they finish.
 */
async function* runCalls(
  o: Driver,
  calls: ParsedCall[],
  messages: ModelMessage[],
  runs: boolean,
): AsyncGenerator<StepPart, CallResult[]> {
  const results: CallResult[] = [];
  const pending = new Map<string, Promise<CallResult>>();
  for (const call of calls) {
    const execute = o.tools[call.toolName]?.execute;
    if (call.error || !execute || !runs) continue;
    const options = {
      toolCallId: call.toolCallId,
      messages,
      abortSignal: o.signal,
      experimental_context: o.context,
    };
    pending.set(
      call.toolCallId,
      Promise.resolve()
        .then(() => execute(call.input as never, options))
        .then(
          (output): CallResult => ({ type: 'tool-result', call, output }),
          (error: unknown): CallResult => ({ type: 'tool-error', call, error }),
        ),
    );
  }
  while (pending.size > 0) {
    const result = await Promise.race(pending.values());
    pending.delete(result.call.toolCallId);
    results.push(result);
    if (o.signal.aborted) continue;
    const { toolCallId, toolName, input } = result.call;
    yield result.type === 'tool-result'
      ? { type: 'tool-result', toolCallId, toolName, input, output: result.output }
      : { type: 'tool-error', toolCallId, toolName, input, error: result.error };
  }
  return results;
}

function errorMessage(error: unknown): string {
  if (error == null) return 'unknown error';
  if (typeof error === 'string') return error;
  if (error instanceof Error) return error.message;
  return JSON.stringify(error);
}

/** The step's messages for the next step (as the SDK's toResponseMessages). */
function responseMessages(outcome: StepOutcome, results: CallResult[]): ModelMessage[] {
  const content = outcome.content.filter((part) => part.type !== 'text' || part.text.length > 0);
  const out: ModelMessage[] = [];
  if (content.length > 0) out.push({ role: 'assistant', content } as ModelMessage);
  const order = new Map(outcome.calls.map((call, i) => [call.toolCallId, i]));
  const sorted = [...results].sort(
    (a, b) => (order.get(a.call.toolCallId) ?? 0) - (order.get(b.call.toolCallId) ?? 0),
  );
  if (sorted.length > 0) {
    out.push({
      role: 'tool',
      content: sorted.map((result) => ({
        type: 'tool-result' as const,
        toolCallId: result.call.toolCallId,
        toolName: result.call.toolName,
        output:
          result.type === 'tool-error'
            ? { type: 'error-text' as const, value: errorMessage(result.error) }
            : typeof result.output === 'string'
              ? { type: 'text' as const, value: result.output }
              : { type: 'json' as const, value: (result.output ?? null) as never },
      })),
    });
  }
  return out;
}
