/**
 * The outermost layer of the model callers get: every `doGenerate`/`doStream` is reported to the
 * model call sink (the cost ledger, metrics and spans) with the provider and model that served it,
 * the tokens the provider reported, the cost from the catalog, the time to first token and the
 * total time. Wraps the recovering model, so a rate-limit fallback is billed to the model that
 * answered. Parts pass through unchanged.
 * @module
 */
import type {
  LanguageModelV3,
  LanguageModelV3CallOptions,
  LanguageModelV3GenerateResult,
  LanguageModelV3StreamPart,
  LanguageModelV3StreamResult,
  LanguageModelV3Usage,
} from '@ai-sdk/provider';
import { resultWithParts, type StreamParts, streamParts } from './stream-parts';
import type { CallPurpose, ModelCallEnd, ModelCallSink, ModelInfo } from './types';

export interface MeterOptions {
  inner: LanguageModelV3 & { readonly current?: string };
  sink: ModelCallSink;
  purpose: CallPurpose;
  sessionId?: string;
  runId?: string;
  /** The selector serving calls now (`provider/model`). */
  current(): string;
  /** Catalog prices of a selector's model. */
  priceOf(selector: string): Pick<ModelInfo, 'cost_per_1m_in' | 'cost_per_1m_out'>;
  /** A monotonic clock in ms (`performance.now`): time to first token and duration. */
  now(): number;
}

/** Parts that mean the model has started answering. */
const FIRST_OUTPUT = new Set(['text-delta', 'reasoning-delta', 'tool-input-start', 'tool-call']);

type Tokens = Pick<
  ModelCallEnd,
  'input_tokens' | 'output_tokens' | 'reasoning_tokens' | 'cached_input_tokens'
>;

export function tokensOf(usage: LanguageModelV3Usage | undefined): Tokens {
  return {
    input_tokens: usage?.inputTokens.total ?? 0,
    output_tokens: usage?.outputTokens.total ?? 0,
    reasoning_tokens: usage?.outputTokens.reasoning ?? 0,
    cached_input_tokens: usage?.inputTokens.cacheRead ?? 0,
  };
}

/** USD for these tokens at the catalog's per-million prices (the agent loop's step cost formula). */
export function costOf(tokens: Tokens, price: Pick<ModelInfo, 'cost_per_1m_in' | 'cost_per_1m_out'>): number {
  return (
    (tokens.input_tokens * (price.cost_per_1m_in ?? 0) +
      tokens.output_tokens * (price.cost_per_1m_out ?? 0)) /
    1_000_000
  );
}

export class MeteredLanguageModel implements LanguageModelV3 {
  readonly specificationVersion = 'v3' as const;
  readonly provider: string;
  readonly modelId: string;

  constructor(private readonly options: MeterOptions) {
    this.provider = options.inner.provider;
    this.modelId = options.inner.modelId;
  }

  get supportedUrls() {
    return this.options.inner.supportedUrls;
  }

  /** The selector currently serving calls (after any recovery). */
  get current(): string {
    return this.options.current();
  }

  async doGenerate(params: LanguageModelV3CallOptions): Promise<LanguageModelV3GenerateResult> {
    const call = this.begin(params);
    try {
      const result = await this.options.inner.doGenerate(params);
      const text = result.content.map((c) => (c.type === 'text' ? c.text : '')).join('');
      await call.end({ usage: result.usage, ttft: null, output: text });
      return result;
    } catch (error) {
      await call.end({ error });
      throw error;
    }
  }

  async doStream(params: LanguageModelV3CallOptions): Promise<LanguageModelV3StreamResult> {
    const call = this.begin(params);
    let result: LanguageModelV3StreamResult;
    try {
      result = await this.options.inner.doStream(params);
    } catch (error) {
      await call.end({ error });
      throw error;
    }
    let ttft: number | null = null;
    let error: unknown;
    let output = '';
    let finished = false;
    // Only the finish part has something to wait for (its record): the other parts pass with no
    // promise of their own.
    const seen = (part: LanguageModelV3StreamPart): Promise<void> | undefined => {
      if (ttft === null && FIRST_OUTPUT.has(part.type)) ttft = this.options.now() - call.at;
      if (part.type === 'text-delta') output += part.delta;
      if (part.type === 'error') error = part.error;
      // Recorded at the finish part: a consumer that stops reading after it is still billed.
      if (part.type !== 'finish') return undefined;
      finished = true;
      return call.end({ usage: part.usage, ttft, output, error });
    };
    // The end of a stream without a finish part is an error (no Error made when it had one).
    const ended = async () => {
      if (!finished)
        await call.end({ ttft, output, error: error ?? new Error('stream ended without a finish part') });
    };
    // The provider's parts as an iterator (./stream-parts.ts): metered the same way, no web stream.
    const parts = streamParts(result);
    if (parts) {
      return resultWithParts(meteredParts(parts, seen, ended), {
        request: result.request,
        response: result.response,
      });
    }
    // One stream pulling from the provider's (not a TransformStream piped to it: that is a readable,
    // a writable and a pipe loop per call, with a promise hop per part).
    const reader = result.stream.getReader();
    const stream = new ReadableStream<LanguageModelV3StreamPart>(
      {
        pull: async (controller) => {
          const next = await reader.read();
          if (next.done) {
            await ended();
            controller.close();
            return;
          }
          await seen(next.value);
          controller.enqueue(next.value);
        },
        cancel: (reason) => reader.cancel(reason),
      },
      { highWaterMark: 0 },
    );
    return { ...result, stream };
  }

  private begin(params: LanguageModelV3CallOptions) {
    const { options } = this;
    const at = options.now();
    const [provider, ...rest] = options.current().split('/');
    const handle = options.sink.start({
      purpose: options.purpose,
      session_id: options.sessionId ?? null,
      run_id: options.runId ?? null,
      provider,
      model: rest.join('/'),
      prompt: params.prompt,
    });
    let ended = false;
    return {
      at,
      async end(result: {
        usage?: LanguageModelV3Usage;
        ttft?: number | null;
        output?: string;
        error?: unknown;
      }) {
        if (ended) return;
        ended = true;
        const selector = options.current();
        const [servedBy, ...model] = selector.split('/');
        const tokens = tokensOf(result.usage);
        const failed = result.error !== undefined && result.error !== null;
        await handle.end({
          provider: servedBy,
          model: model.join('/'),
          ...tokens,
          cost: costOf(tokens, options.priceOf(selector)),
          ttft_ms: result.ttft ?? null,
          duration_ms: Math.max(0, options.now() - at),
          status: failed ? 'error' : 'ok',
          ...(failed ? { error: describe(result.error) } : {}),
          ...(result.output ? { output: result.output } : {}),
        });
      },
    };
  }
}

function describe(error: unknown): string {
  if (error instanceof Error) return `${error.name}: ${error.message.split('\n')[0]}`;
  return String(error).split('\n')[0];
}

const DONE: IteratorReturnResult<undefined> = Object.freeze({ done: true, value: undefined });

/**
 * `parts` with each part `seen` before it is handed on and `ended` after the last, as an async
 * generator would do it but with one promise a part (the inner `next`'s `then`) instead of the
 * generator's five or so (its own `next`, the awaits of the inner `next`, of `seen` and of the
 * `yield`). Read by one consumer at a time (the step driver, or the stream's `pull`), as the
 * generator was. Left early (`return`, or a failure of the inner stream or of `seen`), the inner
 * stream is returned; after the end or a `return`, `next` answers done without reading it again.
 */
function meteredParts(
  parts: StreamParts,
  seen: (part: LanguageModelV3StreamPart) => Promise<void> | undefined,
  ended: () => Promise<void>,
): StreamParts {
  let closed = false;
  const close = async (error: unknown): Promise<never> => {
    closed = true;
    await parts.return?.();
    throw error;
  };
  const step = (
    next: IteratorResult<LanguageModelV3StreamPart, undefined>,
  ):
    | IteratorResult<LanguageModelV3StreamPart, undefined>
    | Promise<IteratorResult<LanguageModelV3StreamPart, undefined>> => {
    if (next.done) {
      closed = true;
      return ended().then(() => DONE);
    }
    let recording: Promise<void> | undefined;
    try {
      recording = seen(next.value);
    } catch (error) {
      return close(error);
    }
    return recording ? recording.then(() => next, close) : next;
  };
  // A ready part whose record is waited for (the finish's), or whose metering failed: the next
  // `next` answers it (a ready part is handed on only when nothing is to be waited for).
  let held: Promise<IteratorResult<LanguageModelV3StreamPart, undefined>> | undefined;
  return {
    next: () => {
      if (held) {
        const next = held;
        held = undefined;
        return next;
      }
      return closed ? Promise.resolve(DONE) : parts.next().then(step, close);
    },
    ready: () => {
      if (closed || held || !parts.ready) return undefined;
      const part = parts.ready();
      if (part === undefined) return undefined;
      const next = step({ done: false, value: part });
      if (!(next instanceof Promise)) return part;
      held = next;
      // Handled here should the reader return before it asks for it.
      next.catch(() => {});
      return undefined;
    },
    return: async () => {
      held = undefined;
      if (!closed) {
        closed = true;
        await parts.return?.();
      }
      return DONE;
    },
  };
}
