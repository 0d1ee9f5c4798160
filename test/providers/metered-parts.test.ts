/**
 * The metered model's parts iterator (src/providers/metered-model.ts `meteredParts`): every part
 * handed on in order, the call recorded once (at the finish part), the inner stream returned when
 * the reader leaves early or it fails, and no more than one promise of its own a part.
 */

import type { LanguageModelV3StreamPart, LanguageModelV3Usage } from '@ai-sdk/provider';
import { describe, expect, it } from 'vitest';
import {
  type ChatStreamInput,
  chatStreamParts,
  PLAIN_CHUNK,
} from '../../src/providers/openai-compatible-stream';
import type { StreamParts } from '../../src/providers/stream-parts';
import { meteredParts } from '../helpers/model-parts';
import { countPromises } from '../helpers/promises';

const usage: LanguageModelV3Usage = {
  inputTokens: { total: 7, noCache: 7, cacheRead: 0, cacheWrite: 0 },
  outputTokens: { total: 3, text: 3, reasoning: 0 },
};

function textParts(deltas: number): LanguageModelV3StreamPart[] {
  return [
    { type: 'stream-start', warnings: [] },
    { type: 'text-start', id: 't' },
    ...Array.from({ length: deltas }, (_, i) => ({ type: 'text-delta' as const, id: 't', delta: `d${i} ` })),
    { type: 'text-end', id: 't' },
    { type: 'finish', usage, finishReason: { unified: 'stop', raw: 'stop' } },
  ];
}

/** An inner stream over `parts` (each `next` one resolved promise) that notes its `return`s. */
function source(parts: LanguageModelV3StreamPart[], failAt = -1) {
  let i = 0;
  const seen = { returns: 0, reads: 0 };
  const iterator: StreamParts = {
    next: () => {
      seen.reads++;
      if (i === failAt) return Promise.reject(new Error('socket closed'));
      return Promise.resolve(
        i < parts.length ? { done: false, value: parts[i++] } : { done: true, value: undefined },
      );
    },
    return: () => {
      seen.returns++;
      return Promise.resolve({ done: true, value: undefined });
    },
  };
  return { iterator, seen };
}

async function drain(parts: StreamParts): Promise<LanguageModelV3StreamPart[]> {
  const out: LanguageModelV3StreamPart[] = [];
  for (let next = await parts.next(); !next.done; next = await parts.next()) out.push(next.value);
  return out;
}

describe('metered stream parts', () => {
  it('ENGINE-CPU-168: hands every part on in order and records the call once, at the finish part', async () => {
    const all = textParts(3);
    const { parts, ends } = await meteredParts(source(all).iterator);
    const out: LanguageModelV3StreamPart[] = [];
    for (let next = await parts.next(); !next.done; next = await parts.next()) {
      out.push(next.value);
      // Billed when the finish part is handed on, before the reader asks for the end.
      if (next.value.type === 'finish') expect(ends).toHaveLength(1);
      else expect(ends).toHaveLength(0);
    }
    expect(out).toEqual(all);
    expect(ends).toHaveLength(1);
    expect(ends[0]).toMatchObject({ status: 'ok', input_tokens: 7, output_tokens: 3, output: 'd0 d1 d2 ' });
    // After the end: done again, nothing read or recorded again.
    expect(await parts.next()).toEqual({ done: true, value: undefined });
    expect(ends).toHaveLength(1);
  });

  it('ENGINE-CPU-169: a stream without a finish part, a failing one and one left early are recorded and returned', async () => {
    const cut = textParts(2).slice(0, -1);
    const noFinish = await meteredParts(source(cut).iterator);
    expect(await drain(noFinish.parts)).toEqual(cut);
    expect(noFinish.ends).toMatchObject([
      { status: 'error', error: 'Error: stream ended without a finish part' },
    ]);

    const failing = source(textParts(2), 3);
    const broken = await meteredParts(failing.iterator);
    await expect(drain(broken.parts)).rejects.toThrow('socket closed');
    expect(failing.seen.returns).toBe(1);
    expect(await broken.parts.next()).toEqual({ done: true, value: undefined });
    expect(failing.seen.reads).toBe(4);

    const early = source(textParts(2));
    const left = await meteredParts(early.iterator);
    await left.parts.next();
    await left.parts.next();
    await left.parts.return?.();
    expect(early.seen.returns).toBe(1);
    expect(await left.parts.next()).toEqual({ done: true, value: undefined });
    expect(early.seen.reads).toBe(2);
  });

  it('ENGINE-CPU-170: a part costs the metered layer at most one promise of its own', async () => {
    const deltas = 40;
    const bare = await countPromises(() => drain(source(textParts(deltas)).iterator));
    const { parts } = await meteredParts(source(textParts(deltas)).iterator);
    const through = await countPromises(() => drain(parts));
    // The async generator it replaced made five or so a part (its `next`, and the awaits of the
    // inner `next`, of the part's metering and of its `yield`).
    expect((through - bare) / (deltas + 4)).toBeLessThanOrEqual(1.5);
  });
});

describe('chat stream parts', () => {
  it('ENGINE-CPU-171: the parts of one body read are yielded with no promises of an async-from-sync iterator', async () => {
    const deltas = 40;
    const events = [
      ...Array.from({ length: deltas }, (_, i) =>
        JSON.stringify({
          id: 'c',
          choices: [{ index: 0, delta: { content: `d${i} ` }, finish_reason: null }],
        }),
      ),
      JSON.stringify({
        id: 'c',
        choices: [{ index: 0, delta: {}, finish_reason: 'stop' }],
        usage: { prompt_tokens: 7, completion_tokens: 3 },
      }),
      '[DONE]',
    ];
    const bytes = new TextEncoder().encode(events.map((e) => `data: ${e}\n\n`).join(''));
    const input = (): ChatStreamInput => ({
      body: (async function* () {
        yield bytes;
      })(),
      schema: { [PLAIN_CHUNK]: () => true },
      warnings: [],
      providerOptionsName: 'fake',
      convertUsage: () => usage,
      url: 'http://fake/v1/chat/completions',
      requestBodyValues: {},
      statusCode: 200,
      responseHeaders: undefined,
    });
    const texts = (parts: LanguageModelV3StreamPart[]) =>
      parts.map((p) => (p.type === 'text-delta' ? p.delta : '')).join('');
    let out: LanguageModelV3StreamPart[] = [];
    const promises = await countPromises(async () => {
      out = [];
      for await (const part of chatStreamParts(input())) out.push(part);
    });
    expect(texts(out)).toBe(Array.from({ length: deltas }, (_, i) => `d${i} `).join(''));
    expect(out.at(-1)).toMatchObject({ type: 'finish', finishReason: { unified: 'stop' } });
    // What an async generator yielding the same parts from an array costs its reader here: the
    // `yield*` of each read's parts (a sync iterable) made about one more a part.
    const copy = [...out];
    const bare = await countPromises(async () => {
      for await (const part of (async function* () {
        for (const p of copy) yield p;
      })())
        out.push(part);
    });
    expect((promises - bare) / copy.length).toBeLessThanOrEqual(0.75);
  });
});
