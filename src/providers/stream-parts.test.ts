import type { LanguageModelV3, LanguageModelV3StreamPart } from '@ai-sdk/provider';
import { describe, expect, it } from 'vitest';
import { MeteredLanguageModel } from './metered-model';
import { readableOf, resultWithParts, STREAM_PARTS, streamParts } from './stream-parts';
import type { ModelCallEnd } from './types';

const usage = {
  inputTokens: { total: 10, noCache: 10, cacheRead: 0, cacheWrite: 0 },
  outputTokens: { total: 2, text: 2, reasoning: 0 },
};
const script: LanguageModelV3StreamPart[] = [
  { type: 'stream-start', warnings: [] },
  { type: 'text-start', id: 't' },
  { type: 'text-delta', id: 't', delta: 'he' },
  { type: 'text-delta', id: 't', delta: 'llo' },
  { type: 'text-end', id: 't' },
  { type: 'finish', finishReason: { unified: 'stop', raw: 'stop' }, usage },
];

/** A model whose results offer their parts as an iterator; counts the iterators left early. */
function iteratorModel() {
  const seen = { returned: 0 };
  const model = {
    specificationVersion: 'v3',
    provider: 'p',
    modelId: 'm',
    supportedUrls: {},
    doGenerate: () => Promise.reject(new Error('unused')),
    doStream: async () => {
      const parts = (async function* () {
        try {
          yield* script;
        } finally {
          seen.returned++;
        }
        return undefined;
      })();
      return resultWithParts(parts, { request: { body: 'b' } });
    },
  } as unknown as LanguageModelV3;
  return { model, seen };
}

function metered(inner: LanguageModelV3, ends: ModelCallEnd[]) {
  let clock = 0;
  return new MeteredLanguageModel({
    inner,
    sink: { start: () => ({ end: async (end) => void ends.push(end) }) },
    purpose: 'agent_step',
    current: () => 'p/m',
    priceOf: () => ({ cost_per_1m_in: 1, cost_per_1m_out: 1 }),
    now: () => clock++,
  });
}

async function drain(iterator: AsyncIterator<LanguageModelV3StreamPart, undefined>) {
  const out: LanguageModelV3StreamPart[] = [];
  for (let next = await iterator.next(); !next.done; next = await iterator.next()) out.push(next.value);
  return out;
}

describe('ENGINE-STEP-STREAM parts iterators through the model layers', () => {
  it('ENGINE-STEP-STREAM-4 the metered model offers the parts as an iterator and meters them', async () => {
    const { model } = iteratorModel();
    const ends: ModelCallEnd[] = [];
    const result = await metered(model, ends).doStream({ prompt: [] });
    expect(Object.keys(result)).not.toContain(STREAM_PARTS.toString());
    const parts = streamParts(result);
    expect(parts).toBeDefined();
    expect(await drain(parts!)).toEqual(script);
    expect(ends).toHaveLength(1);
    expect(ends[0]).toMatchObject({ status: 'ok', output: 'hello', input_tokens: 10, output_tokens: 2 });
    expect(ends[0].ttft_ms).not.toBeNull();
    expect(result.request).toEqual({ body: 'b' });
    // Taken once: the stream cannot be made from parts already handed out.
    expect(streamParts(result)).toBeUndefined();
  });

  it('ENGINE-STEP-STREAM-5 its stream, when read, carries the same parts; the iterator is then not offered', async () => {
    const { model } = iteratorModel();
    const ends: ModelCallEnd[] = [];
    const result = await metered(model, ends).doStream({ prompt: [] });
    const reader = result.stream.getReader();
    const out: LanguageModelV3StreamPart[] = [];
    for (let next = await reader.read(); !next.done; next = await reader.read()) out.push(next.value);
    expect(out).toEqual(script);
    expect(ends).toHaveLength(1);
    expect(streamParts(result)).toBeUndefined();
  });

  it('ENGINE-STEP-STREAM-6 leaving the metered iterator early ends the provider iterator', async () => {
    const { model, seen } = iteratorModel();
    const parts = streamParts(await metered(model, []).doStream({ prompt: [] }))!;
    await parts.next();
    await parts.next();
    await parts.return?.();
    expect(seen.returned).toBe(1);
  });

  it('ENGINE-STEP-STREAM-7 a readable made of parts cancels them', async () => {
    const { model, seen } = iteratorModel();
    const parts = streamParts(await model.doStream({ prompt: [] }))!;
    const reader = readableOf(parts).getReader();
    await reader.read();
    await reader.cancel();
    expect(seen.returned).toBe(1);
  });

  it('ENGINE-STEP-STREAM-8 a stream that ends without a finish part is metered as an error', async () => {
    const inner = {
      ...iteratorModel().model,
      doStream: async () =>
        resultWithParts(
          (async function* () {
            yield* script.slice(0, -1);
            return undefined;
          })(),
          {},
        ),
    } as unknown as LanguageModelV3;
    const ends: ModelCallEnd[] = [];
    await drain(streamParts(await metered(inner, ends).doStream({ prompt: [] }))!);
    expect(ends).toHaveLength(1);
    expect(ends[0]).toMatchObject({
      status: 'error',
      error: 'Error: stream ended without a finish part',
      output: 'hello',
    });
  });
});
