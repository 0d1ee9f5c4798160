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
 * It hands on the same parts `streamText`'s `fullStream` does for what the run records
 * (./run-stream.ts `recordPart`): pushed to a sink (`drive`), waiting only for the promise the sink
 * answers, with no async generator between the model's parts and the run; `fullStream` reads the
 * same drive through an iterator (./pulled-parts.ts).
 * @module
 */
import type {
  LanguageModelV3,
  LanguageModelV3CallOptions,
  LanguageModelV3StreamPart,
  LanguageModelV3StreamResult,
  SharedV3ProviderMetadata,
} from '@ai-sdk/provider';
import type { LanguageModelUsage, ModelMessage, ToolSet } from 'ai';
import { partsOf } from '../providers/stream-parts';
import { requestWhileStarting } from './early-request';
import { type PartSink, pulled } from './pulled-parts';
import {
  type CallResult,
  type ContentText,
  errorMessage,
  type ParsedCall,
  parseCall,
  responseMessages,
  type StepContent,
  violation,
} from './step-calls';
import type { StartGate } from './step-ends';
import { PromptCache, requestTools, type StepRequestSource, sdkInternal } from './step-request';
import { handOn, SinkFailure, StepEndGate, type StepPart } from './step-sink';

type Internal = typeof import('ai/internal');
type Ai = typeof import('ai');

/** What the run's preparation decides for one step (the subset of `prepareStep`'s result svc uses). */
export interface StepSettings {
  activeTools?: string[];
  toolChoice?: 'none';
  system?: string;
  messages?: ModelMessage[];
  /** Prepared while the step end before was pending: false once it answered when they do not hold. */
  holds?: () => boolean;
}

export type { StepPart } from './step-sink';

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
  /**
   * A step with calls that goes on does not wait for its `finish-step`'s promise (the step end,
   * PostgreSQL) before the next model request (./step-sink.ts `StepEndGate`).
   */
  overlapsStepEnd?: boolean;
  /**
   * A run prepared during its start's round trip (./step-ends.ts `startGate`, p-pgmodel): its first
   * model request is sent before the gate answered (none when it is `shut` already) and its stream
   * read only once it `opens`; shut, the request is aborted and the drive ends with no part
   * (./early-request.ts).
   */
  opens?: StartGate;
  /** The run's preparation of each step; `ending`: the step end before it, still in flight. */
  prepareStep(stepNumber: number, messages: ModelMessage[], ending?: Promise<void>): Promise<StepSettings>;
}

/** The options with the SDK's internal helpers (`ai/internal`: prompt conversion, tools, retries, usage). */
interface Driver extends StepDriverOptions {
  internal: Internal;
}

/** The driven steps: `drive` hands their parts to a sink; `fullStream` reads them like `streamText`'s. */
export interface DrivenSteps {
  /**
   * The steps run, each part handed to `sink` as it comes; a promise the sink answers is waited
   * for before the next part. A sink's throw or rejection ends the drive (the model's stream
   * cancelled, no part after it) and is the drive's rejection; the steps' own errors are parts.
   */
  drive(sink: PartSink<StepPart>): Promise<void>;
  /** The same drive read with `for await` (one drive per iterator). */
  fullStream: AsyncIterable<StepPart>;
}

export function driveSteps(o: StepDriverOptions): DrivenSteps {
  const drive = (sink: PartSink<StepPart>) => steps(o, sink);
  return { drive, fullStream: pulled(drive) };
}

/** What one model call produced. */
interface StepOutcome {
  calls: ParsedCall[];
  /** The error results of the invalid calls (handed on with their calls). */
  invalid: CallResult[];
  content: StepContent;
  finishReason: string;
  usage: LanguageModelUsage | undefined;
  terminal: boolean;
  output: boolean;
}

/** The run's steps, their parts handed to `sink`; a sink's failure is the drive's rejection. */
async function steps(options: StepDriverOptions, sink: PartSink<StepPart>): Promise<void> {
  try {
    await stepsTo(options, sink);
  } catch (error) {
    throw error instanceof SinkFailure ? error.cause : error;
  }
}

async function stepsTo(options: StepDriverOptions, into: PartSink<StepPart>): Promise<void> {
  const gate = new StepEndGate(options.signal, into);
  try {
    await stepsThrough(options, gate);
  } finally {
    // The drive ends (normally, aborted or failing) once the step end before answered.
    const settling = gate.settled();
    if (settling) await settling;
  }
}

async function stepsThrough(options: StepDriverOptions, gate: StepEndGate): Promise<void> {
  const sink = gate.sink;
  let o: Driver;
  try {
    // `Object.assign`, not `{ ...options, internal }` (a map a run on Node 20, p-sqlprofile).
    const internal = await sdkInternal();
    o = Object.assign({}, options, { internal });
  } catch (error) {
    await handOn(sink, { type: 'error', error });
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
      const settings = await o.prepareStep(stepNumber, stepMessages, gate.pending);
      if (signal.aborted) return;
      gate.check(settings.holds);
      const active = activeSet(o.tools, settings.activeTools);
      const tools = await requestTools(o, active);
      const none = settings.toolChoice === 'none';
      // As the SDK: no tools, no tool choice (but for `none`).
      const toolChoice = none ? { type: 'none' as const } : tools ? { type: 'auto' as const } : undefined;
      const call: LanguageModelV3CallOptions = {
        prompt: await prompt.for(settings.system ?? o.system, settings.messages),
        tools,
        toolChoice,
        abortSignal: gate.signal(),
        ...(o.maxOutputTokens ? { maxOutputTokens: o.maxOutputTokens } : {}),
        ...(o.providerOptions ? { providerOptions: o.providerOptions } : {}),
      };
      const gated = stepNumber === 0 && o.opens && !o.opens.open() ? o.opens : undefined;
      if (gated?.shut()) return;
      const result = gated
        ? await requestWhileStarting(gated, call.abortSignal, (abortSignal) =>
            retry(() => o.model.doStream(Object.assign({}, call, { abortSignal }))),
          )
        : await retry(() => o.model.doStream(call));
      if (!result) return;
      outcome = await readStep(new StepReading(o, active, none), sink, result);
    } catch (error) {
      // Prepared before the step end answered what changes it (./step-ahead.ts): once more.
      if (gate.takeStale() && !signal.aborted) {
        stepNumber--;
        continue;
      }
      // The sink's own failure ends the drive as it is; the step's is a part.
      if (error instanceof SinkFailure) throw error;
      if (signal.aborted) return;
      await handOn(sink, { type: 'error', error });
      return;
    }
    if (signal.aborted) return;
    if (!outcome.terminal && !outcome.output) {
      await handOn(sink, { type: 'error', error: new o.ai.NoOutputGeneratedError({ message: NO_OUTPUT }) });
      return;
    }
    // Calls run once the model's answer is complete, when it ended normally (as in streamText).
    const runs = outcome.finishReason === 'stop' || outcome.finishReason === 'tool-calls';
    const results = [...outcome.invalid, ...(await runCalls(o, sink, outcome.calls, stepMessages, runs))];
    if (signal.aborted) return;
    const executed = outcome.calls.length > 0 && results.length === outcome.calls.length;
    const last = !executed || stepNumber + 1 >= maxSteps;
    const overlaps = !last && o.overlapsStepEnd === true;
    const ended = handOn(sink, {
      type: 'finish-step',
      finishReason: outcome.finishReason,
      usage: outcome.usage ?? NO_USAGE,
      ...(overlaps ? { overlaps } : {}),
    });
    if (ended) {
      if (overlaps) gate.set(ended);
      else await ended;
    }
    if (last) {
      await handOn(sink, { type: 'finish', finishReason: outcome.finishReason });
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

/** One model call's stream read to its end, its parts handed on as they arrive. */
async function readStep(
  step: StepReading,
  sink: PartSink<StepPart>,
  result: LanguageModelV3StreamResult,
): Promise<StepOutcome> {
  const parts = partsOf(result);
  const handing: StepPart[] = [];
  let ended = false;
  try {
    for (;;) {
      // A part read with the last one is taken at once; the next read is awaited.
      let chunk = parts.ready?.();
      if (chunk === undefined) {
        const next = await parts.next();
        if (next.done) {
          ended = true;
          break;
        }
        chunk = next.value;
      }
      step.read(chunk, handing);
      for (let i = 0; i < handing.length; i++) {
        const waiting = handOn(sink, handing[i] as StepPart);
        if (waiting)
          try {
            await waiting;
          } catch (error) {
            throw new SinkFailure(error);
          }
      }
      handing.length = 0;
    }
  } finally {
    // Left early (the sink failed, an error): the model's stream is cancelled, not left open.
    if (!ended) parts.return?.().catch(() => {});
  }
  return step.out;
}

const START_STEP: StepPart = { type: 'start-step' };

/** What one model call's parts make of the step: its outcome, and the parts the run is handed. */
class StepReading {
  readonly out: StepOutcome = {
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
  private readonly open = new Map<string, { id: string; part: ContentText }>();
  private readonly used = new Set<string>();
  private readonly withheld: unknown[] = [];
  private started = false;

  constructor(
    private readonly o: Driver,
    private readonly active: ReadonlySet<string> | undefined,
    /** The step is told to answer without tools: a call is a violation, not run. */
    private readonly withholdCalls: boolean,
  ) {}

  /** `chunk` taken into the step; the parts it makes for the run pushed on `into`. */
  read(chunk: LanguageModelV3StreamPart, into: StepPart[]): void {
    if (chunk.type === 'stream-start') return;
    if (!this.started) {
      this.started = true;
      into.push(START_STEP);
    }
    const out = this.out;
    switch (chunk.type) {
      case 'text-start':
      case 'reasoning-start':
        out.output = true;
        this.start(chunk.type === 'text-start' ? 'text' : 'reasoning', chunk);
        break;
      case 'text-delta':
      case 'reasoning-delta': {
        out.output = true;
        const kind = chunk.type === 'text-delta' ? 'text' : 'reasoning';
        const entry = this.openPart(kind, chunk);
        if (entry) {
          entry.part.text += chunk.delta;
          if (chunk.providerMetadata) entry.part.providerOptions = chunk.providerMetadata;
        }
        if (kind === 'text' && chunk.delta.length === 0 && chunk.providerMetadata == null) break;
        into.push({
          type: chunk.type,
          id: entry?.id ?? chunk.id,
          text: chunk.delta,
          providerMetadata: chunk.providerMetadata,
        });
        break;
      }
      case 'text-end':
      case 'reasoning-end': {
        out.output = true;
        const entry = this.openPart(chunk.type === 'text-end' ? 'text' : 'reasoning', chunk, true);
        if (entry && chunk.providerMetadata) entry.part.providerOptions = chunk.providerMetadata;
        into.push({ type: chunk.type, id: entry?.id ?? chunk.id, providerMetadata: chunk.providerMetadata });
        break;
      }
      case 'tool-call':
        out.output = true;
        if (this.withholdCalls) this.withheld.push(chunk);
        else this.call(chunk, into);
        break;
      case 'finish':
        out.terminal = true;
        out.usage = this.o.internal.asLanguageModelUsage(chunk.usage);
        out.finishReason = chunk.finishReason.unified;
        if (this.withheld.length > 0) {
          out.finishReason = 'error';
          into.push({ type: 'error', error: violation(this.o, chunk.finishReason.unified, this.withheld) });
        }
        break;
      case 'error':
        out.terminal = true;
        out.finishReason = 'error';
        into.push({ type: 'error', error: chunk.error });
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

  private start(
    kind: 'text' | 'reasoning',
    chunk: { id: string; providerMetadata?: SharedV3ProviderMetadata },
  ) {
    const part: ContentText = {
      type: kind,
      text: '',
      ...(chunk.providerMetadata ? { providerOptions: chunk.providerMetadata } : {}),
    };
    let id = `${kind}:${chunk.id}`;
    for (let n = 1; this.used.has(id); n++) id = `${kind}:${chunk.id}-${n}`;
    this.used.add(id);
    this.open.set(`${kind}:${chunk.id}`, { id: id.slice(kind.length + 1), part });
    this.out.content.push(part);
  }

  /** The open part a delta or end chunk belongs to; an end chunk closes it. */
  private openPart(kind: 'text' | 'reasoning', chunk: { id: string }, close = false) {
    const key = `${kind}:${chunk.id}`;
    const entry = this.open.get(key);
    if (close) this.open.delete(key);
    return entry;
  }

  /** A tool call of the step: recorded in its outcome, handed on, with its error result when invalid. */
  private call(chunk: Extract<LanguageModelV3StreamPart, { type: 'tool-call' }>, into: StepPart[]) {
    const call = parseCall(this.o, chunk, this.active);
    this.out.calls.push(call);
    this.out.content.push({
      type: 'tool-call',
      toolCallId: call.toolCallId,
      toolName: call.toolName,
      input: call.error && (typeof call.input !== 'object' || call.input === null) ? {} : call.input,
      ...(call.providerMetadata ? { providerOptions: call.providerMetadata } : {}),
    });
    into.push({
      type: 'tool-call',
      toolCallId: call.toolCallId,
      toolName: call.toolName,
      input: call.input,
      providerMetadata: call.providerMetadata,
      ...(call.error ? { invalid: true } : {}),
    });
    // An invalid call's error result comes at once (the SDK's tool results stream).
    if (call.error) {
      const error = errorMessage(call.error);
      this.out.invalid.push({ type: 'tool-error', call, error });
      into.push({
        type: 'tool-error',
        toolCallId: call.toolCallId,
        toolName: call.toolName,
        input: call.input,
        error,
      });
    }
  }
}

/**
 * The step's valid calls, when the step ended normally: they start together (the run's tool
 * bridge orders them) and their results are handed on as they finish.
 */
async function runCalls(
  o: Driver,
  sink: PartSink<StepPart>,
  calls: ParsedCall[],
  messages: ModelMessage[],
  runs: boolean,
): Promise<CallResult[]> {
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
    // One call: its own promise, no race among one.
    const result = await (pending.size === 1
      ? (pending.values().next().value as Promise<CallResult>)
      : Promise.race(pending.values()));
    pending.delete(result.call.toolCallId);
    results.push(result);
    if (o.signal.aborted) continue;
    const { toolCallId, toolName, input } = result.call;
    const waiting = handOn(
      sink,
      result.type === 'tool-result'
        ? { type: 'tool-result', toolCallId, toolName, input, output: result.output }
        : { type: 'tool-error', toolCallId, toolName, input, error: result.error },
    );
    if (waiting) await waiting;
  }
  return results;
}
