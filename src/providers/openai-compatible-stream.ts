/**
 * The OpenAI-compatible chat model's streamed answer read without web streams: the response body's
 * chunks are decoded (a streaming TextDecoder: a UTF-8 sequence split across chunks stays whole),
 * cut into server-sent events by `eventsource-parser`'s plain parser, each event's JSON parsed and
 * checked against the model's chunk schema (the SDK's `safeParseJSON`), and turned into the
 * model's stream parts by the same steps as the SDK's `doStream` transform
 * (@ai-sdk/openai-compatible 2.0.x, `OpenAICompatibleChatLanguageModel`), tool calls by the SDK's
 * own `StreamingToolCallTracker`. The SDK's path is a TextDecoderStream, an EventSourceParserStream,
 * a parsing TransformStream and the model's TransformStream, piped; this is one async iterator.
 * `src/providers/openai-compatible-lean.test.ts` compares the parts with the SDK's.
 * @module
 */
import {
  APICallError,
  InvalidResponseDataError,
  type LanguageModelV3FinishReason,
  type LanguageModelV3StreamPart,
  type LanguageModelV3Usage,
  type SharedV3ProviderMetadata,
} from '@ai-sdk/provider';
import { generateId, isAbortError, StreamingToolCallTracker, safeParseJSON } from '@ai-sdk/provider-utils';
import { createParser } from 'eventsource-parser';
import { batchedParts, type StreamParts } from './stream-parts';

export interface ChatStreamInput {
  /** fetch's response body, or the chunks of ./http-transport.ts's answer. */
  body: ReadableStream<Uint8Array> | AsyncIterable<Uint8Array>;
  /** The model's chunk schema (the SDK's `FlexibleSchema`). */
  schema: unknown;
  warnings: unknown[];
  providerOptionsName: string;
  convertUsage(usage: unknown): LanguageModelV3Usage;
  /** For the error of a body that fails mid-read (as the SDK's `wrapResponseBodyStream`). */
  url: string;
  requestBodyValues: unknown;
  statusCode: number;
  responseHeaders: Record<string, string> | undefined;
}

/**
 * Where a chunk schema keeps its test for a chunk it takes as it is, with no promise
 * (./openai-compatible-lean.ts `leanChunkValidation`): such a chunk is parsed and taken here
 * without the SDK's asynchronous `safeParseJSON` (two promises per chunk), with the same result.
 */
export const PLAIN_CHUNK = Symbol('svc.plainChunk');

type Chunk = {
  id?: string | null;
  created?: number | null;
  model?: string | null;
  usage?: Usage | null;
  choices: Array<{ finish_reason?: string | null; delta?: Delta | null }>;
  error?: unknown;
};
type Usage = {
  completion_tokens_details?: {
    accepted_prediction_tokens?: number | null;
    rejected_prediction_tokens?: number | null;
  } | null;
};
type ToolCallDelta = {
  index?: number | null;
  id?: string | null;
  function?: { name?: string | null; arguments?: string | null };
  extra_content?: { google?: { thought_signature?: string | null } | null } | null;
};
type Delta = {
  content?: string | Array<{ type: string; text?: unknown; thinking?: unknown }> | null;
  refusal?: string | null;
  reasoning_content?: string | null;
  reasoning?: string | null;
  tool_calls?: ToolCallDelta[] | null;
};

/**
 * The model's parts for the body's events, as each body chunk is read: the parts of one read are
 * taken with no promise after its first (`ready`, ./stream-parts.ts `batchedParts`).
 */
export function chatStreamParts(
  input: ChatStreamInput,
): StreamParts & AsyncIterable<LanguageModelV3StreamPart> {
  return batchedParts(new BodyBatches(input));
}

type Batch = readonly LanguageModelV3StreamPart[];
const BODY_DONE: IteratorReturnResult<undefined> = { done: true, value: undefined };

/**
 * The parts of each body read, one batch a read that made any: the stream's start first, then
 * a batch a read, then what the body's end makes (the finish). One `then` a read, not an async
 * generator (whose `next`, awaits and `yield` are promises of their own on every read).
 */
class BodyBatches implements AsyncIterator<Batch, undefined> {
  private readonly state: ChatStreamState;
  private readonly events: string[] = [];
  private readonly parser = createParser({ onEvent: (event) => this.events.push(event.data) });
  private readonly decoder = new TextDecoder();
  private readonly reader: BodyReader;
  private readonly plain: ((value: unknown) => boolean) | undefined;
  private started = false;
  private over = false;

  constructor(private readonly input: ChatStreamInput) {
    this.state = new ChatStreamState(input);
    this.reader = readerOf(input.body);
    this.plain = plainTestOf(input.schema);
  }

  next(): Promise<IteratorResult<Batch, undefined>> {
    if (this.over) return Promise.resolve(BODY_DONE);
    if (!this.started) {
      this.started = true;
      return Promise.resolve({
        done: false,
        value: [{ type: 'stream-start', warnings: this.input.warnings as never }],
      });
    }
    return this.reader.read().then(
      (next) => {
        try {
          return this.took(next);
        } catch (error) {
          return this.failed(error);
        }
      },
      (error: unknown) => this.failed(readError(this.input, error)),
    );
  }

  /** Left early or failed: the body is cancelled (as the SDK's pipe on a cancelled stream). */
  async return(): Promise<IteratorResult<Batch, undefined>> {
    if (!this.over) {
      this.over = true;
      await this.reader.cancel().catch(() => {});
    }
    return BODY_DONE;
  }

  private async failed(error: unknown): Promise<never> {
    await this.return();
    throw error;
  }

  /** One body read taken: its parts, or (a read that made none) the next read's. */
  private took(
    next: IteratorResult<Uint8Array, unknown>,
  ): IteratorResult<Batch, undefined> | Promise<IteratorResult<Batch, undefined>> {
    const { state, events } = this;
    if (next.done) {
      this.over = true;
      this.reader.releaseLock();
      // As the SDK: text still in the decoder or an event without its blank line is not an event.
      state.flush();
      return this.batch();
    }
    this.parser.feed(this.decoder.decode(next.value, { stream: true }));
    // Read in place and emptied after (no array per read): only this reader feeds the parser.
    for (let i = 0; i < events.length; i++) {
      const data = events[i] as string;
      if (data === '[DONE]') continue;
      const now = this.plain ? parsedNow(data, this.plain) : undefined;
      // A chunk the SDK's asynchronous parse is to check: it and the rest of the read, awaited.
      if (!now)
        return this.parsed(i).then(
          () => this.batch(),
          (error: unknown) => this.failed(error),
        );
      state.chunk(now);
    }
    events.length = 0;
    return this.batch();
  }

  /** The read's events from `from` on, each through the SDK's `safeParseJSON`. */
  private async parsed(from: number): Promise<void> {
    const { state, events } = this;
    for (let i = from; i < events.length; i++) {
      const data = events[i] as string;
      if (data === '[DONE]') continue;
      const now = this.plain ? parsedNow(data, this.plain) : undefined;
      state.chunk(now ?? (await safeParseJSON({ text: data, schema: this.input.schema as never })));
    }
    events.length = 0;
  }

  /** The parts taken so far as a batch; none: the next read's (or the end). */
  private batch(): IteratorResult<Batch, undefined> | Promise<IteratorResult<Batch, undefined>> {
    const parts = this.state.take();
    if (parts.length > 0) return { done: false, value: parts };
    return this.over ? BODY_DONE : this.next();
  }
}

function plainTestOf(schema: unknown): ((value: unknown) => boolean) | undefined {
  if (typeof schema !== 'object' || schema === null) return undefined;
  const test: unknown = Reflect.get(schema, PLAIN_CHUNK);
  return typeof test === 'function' ? (test as (value: unknown) => boolean) : undefined;
}

/**
 * `safeParseJSON`'s answer for a chunk the schema takes as it is, or undefined for the SDK to
 * parse: text that does not parse, or that names `__proto__` or `constructor` as a key (the SDK's
 * secure parse then filters or refuses it; its two patterns, as @ai-sdk/provider-utils has them).
 */
function parsedNow(data: string, plain: (value: unknown) => boolean): ParseResult | undefined {
  if (SUSPECT_PROTO.test(data) || SUSPECT_CONSTRUCTOR.test(data)) return undefined;
  let value: unknown;
  try {
    value = JSON.parse(data);
  } catch {
    return undefined;
  }
  return plain(value) ? { success: true, value } : undefined;
}
const SUSPECT_PROTO =
  /"(?:_|\\u005[Ff])(?:_|\\u005[Ff])(?:p|\\u0070)(?:r|\\u0072)(?:o|\\u006[Ff])(?:t|\\u0074)(?:o|\\u006[Ff])(?:_|\\u005[Ff])(?:_|\\u005[Ff])"\s*:/;
const SUSPECT_CONSTRUCTOR =
  /"(?:c|\\u0063)(?:o|\\u006[Ff])(?:n|\\u006[Ee])(?:s|\\u0073)(?:t|\\u0074)(?:r|\\u0072)(?:u|\\u0075)(?:c|\\u0063)(?:t|\\u0074)(?:o|\\u006[Ff])(?:r|\\u0072)"\s*:/;

interface BodyReader {
  read(): Promise<IteratorResult<Uint8Array, unknown>>;
  releaseLock(): void;
  cancel(): Promise<unknown>;
}

/** A web stream's reader, or the same three calls over an async iterable's iterator. */
function readerOf(body: ChatStreamInput['body']): BodyReader {
  if (body instanceof ReadableStream) return body.getReader() as BodyReader;
  const iterator = body[Symbol.asyncIterator]();
  return {
    read: () => iterator.next(),
    releaseLock: () => {},
    cancel: async () => iterator.return?.(),
  };
}

function readError(input: ChatStreamInput, error: unknown): unknown {
  if (isAbortError(error)) return error;
  return new APICallError({
    message: 'Failed to process successful response',
    cause: error,
    statusCode: input.statusCode,
    url: input.url,
    responseHeaders: input.responseHeaders,
    requestBodyValues: input.requestBodyValues,
  });
}

type ParseResult = { success: true; value: unknown } | { success: false; error: unknown };

const NONE: readonly LanguageModelV3StreamPart[] = Object.freeze([]);

/** The SDK transform's state and steps, its `controller.enqueue` an array taken after each read. */
class ChatStreamState {
  private queue: LanguageModelV3StreamPart[] = [];
  private readonly tracker: StreamingToolCallTracker;
  private readonly pending = new Map<number, { id: string | null; args: string; extra: unknown }>();
  private readonly forwarded = new Set<number>();
  private finishReason: LanguageModelV3FinishReason | undefined;
  private rawFinishReason: string | undefined;
  private usage: Usage | undefined;
  private first = true;
  private reasoning = false;
  private text = false;
  private refused = false;

  constructor(private readonly input: ChatStreamInput) {
    const name = input.providerOptionsName;
    this.tracker = new StreamingToolCallTracker(
      { enqueue: (part?: LanguageModelV3StreamPart) => part && this.queue.push(part) },
      {
        generateId,
        extractMetadata: (delta: ToolCallDelta) => {
          const thoughtSignature = delta.extra_content?.google?.thought_signature;
          return thoughtSignature ? { [name]: { thoughtSignature } } : undefined;
        },
        buildToolCallProviderMetadata: (metadata: SharedV3ProviderMetadata | undefined) => metadata,
      } as never,
    );
  }

  /** The parts made since the last take, in order (one batch of BodyBatches). */
  take(): readonly LanguageModelV3StreamPart[] {
    if (this.queue.length === 0) return NONE;
    const parts = this.queue;
    this.queue = [];
    return parts;
  }

  chunk(parsed: ParseResult): void {
    if (!parsed.success) {
      this.finishReason = { unified: 'error', raw: undefined };
      this.queue.push({ type: 'error', error: parsed.error });
      return;
    }
    const value = parsed.value as Chunk;
    if ('error' in value) {
      this.finishReason = { unified: 'error', raw: undefined };
      this.queue.push({ type: 'error', error: value.error });
      return;
    }
    if (this.first) {
      this.first = false;
      this.queue.push({
        type: 'response-metadata',
        id: value.id ?? undefined,
        modelId: value.model ?? undefined,
        timestamp: value.created != null ? new Date(value.created * 1000) : undefined,
      });
    }
    if (value.usage != null) this.usage = value.usage;
    const choice = value.choices[0];
    if (choice?.finish_reason != null) this.rawFinishReason = choice.finish_reason;
    if (choice?.delta == null) return;
    this.delta(choice.delta);
  }

  private delta(delta: Delta): void {
    const reasoning = delta.reasoning_content ?? delta.reasoning;
    if (reasoning) this.reasoningDelta(reasoning);
    for (const part of contentParts(delta.content)) {
      if (part.type === 'reasoning') this.reasoningDelta(part.text);
      else this.textDelta(part.text);
    }
    const refusal = delta.refusal;
    if (refusal != null && refusal.length > 0) {
      this.refused = true;
      this.textDelta(refusal);
    }
    if (delta.tool_calls != null && delta.tool_calls.length > 0) {
      if (this.reasoning) {
        this.queue.push({ type: 'reasoning-end', id: 'reasoning-0' });
        this.reasoning = false;
      }
      for (const call of delta.tool_calls) this.toolCallDelta(call);
    }
  }

  private reasoningDelta(delta: string): void {
    if (this.text) {
      this.queue.push({ type: 'text-end', id: 'txt-0' });
      this.text = false;
    }
    if (!this.reasoning) {
      this.queue.push({ type: 'reasoning-start', id: 'reasoning-0' });
      this.reasoning = true;
    }
    this.queue.push({ type: 'reasoning-delta', id: 'reasoning-0', delta });
  }

  private textDelta(delta: string): void {
    if (this.reasoning) {
      this.queue.push({ type: 'reasoning-end', id: 'reasoning-0' });
      this.reasoning = false;
    }
    if (!this.text) {
      this.queue.push({ type: 'text-start', id: 'txt-0' });
      this.text = true;
    }
    this.queue.push({ type: 'text-delta', id: 'txt-0', delta });
  }

  /** A call's arguments are held until its name arrives (the SDK's `processToolCallDelta`). */
  private toolCallDelta(delta: ToolCallDelta): void {
    const index = delta.index;
    if (index == null || this.forwarded.has(index)) {
      this.tracker.processDelta(delta as never);
      return;
    }
    let pending = this.pending.get(index);
    if (pending == null) {
      pending = { id: delta.id ?? null, args: '', extra: delta.extra_content ?? null };
      this.pending.set(index, pending);
    } else {
      if (pending.id == null && delta.id != null) pending.id = delta.id;
      if (pending.extra == null && delta.extra_content != null) pending.extra = delta.extra_content;
    }
    const args = delta.function?.arguments;
    if (args != null) pending.args += args;
    const name = delta.function?.name;
    if (name != null) {
      this.tracker.processDelta({
        index,
        id: pending.id,
        function: { name, arguments: pending.args },
        extra_content: pending.extra ?? undefined,
      } as never);
      this.pending.delete(index);
      this.forwarded.add(index);
    }
  }

  flush(): void {
    if (this.reasoning) this.queue.push({ type: 'reasoning-end', id: 'reasoning-0' });
    if (this.text) this.queue.push({ type: 'text-end', id: 'txt-0' });
    for (const [index, pending] of this.pending)
      this.tracker.processDelta({ index, id: pending.id, function: { arguments: pending.args } } as never);
    this.pending.clear();
    this.tracker.flush();
    if (this.rawFinishReason != null)
      this.finishReason = {
        unified: finishReasonOf(this.rawFinishReason, this.refused),
        raw: this.rawFinishReason,
      };
    if (this.finishReason == null) {
      this.finishReason = { unified: 'error', raw: undefined };
      this.queue.push({
        type: 'error',
        error: new InvalidResponseDataError({
          data: undefined,
          message: 'Response stream ended without a finish reason.',
        }),
      });
    }
    const name = this.input.providerOptionsName;
    const metadata: Record<string, Record<string, number>> = { [name]: {} };
    const details = this.usage?.completion_tokens_details;
    if (details?.accepted_prediction_tokens != null)
      metadata[name].acceptedPredictionTokens = details.accepted_prediction_tokens;
    if (details?.rejected_prediction_tokens != null)
      metadata[name].rejectedPredictionTokens = details.rejected_prediction_tokens;
    this.queue.push({
      type: 'finish',
      finishReason: this.finishReason,
      usage: this.input.convertUsage(this.usage),
      providerMetadata: metadata,
    });
  }
}

function finishReasonOf(raw: string, refused: boolean): LanguageModelV3FinishReason['unified'] {
  switch (raw) {
    case 'stop':
      return refused ? 'content-filter' : 'stop';
    case 'length':
      return 'length';
    case 'content_filter':
      return 'content-filter';
    case 'function_call':
    case 'tool_calls':
      return 'tool-calls';
    default:
      return 'other';
  }
}

/** The SDK's `convertOpenAICompatibleContent`. */
function contentParts(content: Delta['content']): Array<{ type: 'text' | 'reasoning'; text: string }> {
  if (content == null) return [];
  if (typeof content === 'string') return content.length > 0 ? [{ type: 'text', text: content }] : [];
  const out: Array<{ type: 'text' | 'reasoning'; text: string }> = [];
  for (const part of content) {
    if (part.type === 'text' && typeof part.text === 'string') {
      if (part.text.length > 0) out.push({ type: 'text', text: part.text });
    } else if (part.type === 'thinking' && Array.isArray(part.thinking)) {
      const text = part.thinking
        .filter(
          (chunk: unknown) =>
            chunk != null &&
            typeof chunk === 'object' &&
            'type' in chunk &&
            chunk.type === 'text' &&
            'text' in chunk &&
            typeof chunk.text === 'string',
        )
        .map((chunk: { text: string }) => chunk.text)
        .join('');
      if (text.length > 0) out.push({ type: 'reasoning', text });
    }
  }
  return out;
}
