/**
 * A model's stream as a plain async iterator of its parts, next to the `ReadableStream` the AI
 * SDK's interface asks for. A model that reads its provider's answer without web streams (the
 * OpenAI-compatible one, ./openai-compatible-lean.ts) puts the iterator on its `doStream` result
 * under STREAM_PARTS and builds the `ReadableStream` only when someone reads `stream`; svc's step
 * driver (../agent/step-driver.ts) reads the iterator and no web stream is made at all.
 *
 * The property is not enumerable: a wrapper that passes the result on as it is keeps it (the
 * recovering model, the tool and message markers), and one that spreads the result into a new
 * one with a stream of its own drops it (spreading reads `stream`, which then owns the iterator).
 * One consumer only: either the iterator or the stream.
 * @module
 */
import type { LanguageModelV3StreamPart, LanguageModelV3StreamResult } from '@ai-sdk/provider';

export const STREAM_PARTS = Symbol.for('svc.streamParts');

/**
 * The parts iterator. `ready`, when the iterator has it: the next part if it is already at hand
 * (read with the one before it), taken with no promise; undefined when the next one is to be
 * awaited through `next` (then `next` answers it, the end, or the error). A reader may mix both.
 */
export type StreamParts = AsyncIterator<LanguageModelV3StreamPart, undefined> & {
  ready?(): LanguageModelV3StreamPart | undefined;
};

type Batches = AsyncIterator<readonly LanguageModelV3StreamPart[], undefined>;
const DONE: IteratorReturnResult<undefined> = { done: true, value: undefined };

/**
 * Parts read in batches (a provider's parts of one body read) as one part at a time: the batch's
 * parts after its first are `ready`, or one resolved promise each through `next`; the next batch
 * is read only when the last one is taken, and `return` returns the batches' iterator.
 */
export function batchedParts(batches: Batches): StreamParts & AsyncIterable<LanguageModelV3StreamPart> {
  let batch: readonly LanguageModelV3StreamPart[] = [];
  let at = 0;
  const first = (next: IteratorResult<readonly LanguageModelV3StreamPart[], undefined>) => {
    if (next.done) return DONE;
    batch = next.value;
    at = 0;
    return at < batch.length
      ? { done: false as const, value: batch[at++] as LanguageModelV3StreamPart }
      : read();
  };
  const read = (): Promise<IteratorResult<LanguageModelV3StreamPart, undefined>> =>
    batches.next().then(first);
  const parts = {
    next: () =>
      at < batch.length
        ? Promise.resolve({ done: false as const, value: batch[at++] as LanguageModelV3StreamPart })
        : read(),
    ready: () => (at < batch.length ? batch[at++] : undefined),
    return: async () => {
      batch = [];
      await batches.return?.();
      return DONE;
    },
    [Symbol.asyncIterator]: () => parts,
  };
  return parts;
}

/** The result's parts as an iterator, when its model offers one and `stream` was not read. */
export function streamParts(result: LanguageModelV3StreamResult): StreamParts | undefined {
  const parts: unknown = Reflect.get(result, STREAM_PARTS);
  return typeof parts === 'function' ? (parts as () => StreamParts | undefined)() : undefined;
}

/** The result's parts: its iterator when its model offers one, else its stream's, through a reader. */
export function partsOf(result: LanguageModelV3StreamResult): StreamParts {
  const parts = streamParts(result);
  if (parts) return parts;
  const reader = result.stream.getReader();
  return {
    next: () => reader.read() as Promise<IteratorResult<LanguageModelV3StreamPart, undefined>>,
    return: async (reason?: unknown) => {
      await reader.cancel(reason);
      return { done: true, value: undefined };
    },
  };
}

/**
 * A `doStream` result over `parts`: its `stream` is made from them on first read; STREAM_PARTS
 * hands them out instead, once, while `stream` was not read.
 */
export function resultWithParts(
  parts: StreamParts,
  rest: Omit<LanguageModelV3StreamResult, 'stream'>,
): LanguageModelV3StreamResult {
  let owner: 'stream' | 'parts' | undefined;
  let stream: ReadableStream<LanguageModelV3StreamPart> | undefined;
  const result = { ...rest } as LanguageModelV3StreamResult;
  Object.defineProperty(result, 'stream', {
    enumerable: true,
    configurable: true,
    get() {
      if (!stream) {
        if (owner === 'parts') throw new Error('the stream parts were already taken');
        owner = 'stream';
        stream = readableOf(parts);
      }
      return stream;
    },
  });
  Object.defineProperty(result, STREAM_PARTS, {
    enumerable: false,
    value: () => {
      if (owner) return undefined;
      owner = 'parts';
      return parts;
    },
  });
  return result;
}

/** The parts as a pulling ReadableStream (what the SDK's stream consumers read). */
export function readableOf(parts: StreamParts): ReadableStream<LanguageModelV3StreamPart> {
  return new ReadableStream<LanguageModelV3StreamPart>(
    {
      async pull(controller) {
        const next = await parts.next();
        if (next.done) controller.close();
        else controller.enqueue(next.value);
      },
      async cancel(reason) {
        await parts.return?.(reason);
      },
    },
    { highWaterMark: 0 },
  );
}
