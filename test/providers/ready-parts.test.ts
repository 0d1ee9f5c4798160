/**
 * The parts of one body read taken with no promise (`StreamParts.ready`, src/providers/stream-parts.ts):
 * the lean provider's parts come in batches (`chatStreamParts`), the metered model passes a ready
 * part on after metering it (the finish part, whose record is waited for, through `next`), and the
 * step driver takes ready parts before it awaits a read.
 */
import type { LanguageModelV3StreamPart, LanguageModelV3Usage } from '@ai-sdk/provider';
import { MockLanguageModelV3 } from 'ai/test';
import { describe, expect, it } from 'vitest';
import {
  type ChatStreamInput,
  chatStreamParts,
  PLAIN_CHUNK,
} from '../../src/providers/openai-compatible-stream';
import { resultWithParts, type StreamParts } from '../../src/providers/stream-parts';
import { driven, meteredParts } from '../helpers/model-parts';
import { countPromises } from '../helpers/promises';

const usage: LanguageModelV3Usage = {
  inputTokens: { total: 7, noCache: 7, cacheRead: 0, cacheWrite: 0 },
  outputTokens: { total: 3, text: 3, reasoning: 0 },
};

/** A chat answer of `deltas` text deltas, all in one body read. */
function oneRead(deltas: number): ChatStreamInput {
  const chunk = (delta: object, finish: string | null = null, extra = {}) =>
    JSON.stringify({
      id: 'c',
      created: 0,
      model: 'm',
      choices: [{ index: 0, delta, finish_reason: finish }],
      ...extra,
    });
  const events = [
    ...Array.from({ length: deltas }, (_, i) => chunk({ content: `d${i} ` })),
    chunk({}, 'stop', { usage: { prompt_tokens: 7, completion_tokens: 3 } }),
    '[DONE]',
  ];
  const bytes = new TextEncoder().encode(events.map((e) => `data: ${e}\n\n`).join(''));
  return {
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
  };
}

/** Every part: `ready` first, `next` when none is ready. */
async function readAll(parts: StreamParts) {
  const out: LanguageModelV3StreamPart[] = [];
  let awaited = 0;
  for (;;) {
    const ready = parts.ready?.();
    if (ready) {
      out.push(ready);
      continue;
    }
    awaited++;
    const next = await parts.next();
    if (next.done) return { out, awaited };
    out.push(next.value);
  }
}

describe('ready parts', () => {
  it('ENGINE-CPU-180: the parts of one body read after its first are ready: the same parts as next alone, four reads awaited', async () => {
    const pulled: LanguageModelV3StreamPart[] = [];
    for await (const part of chatStreamParts(oneRead(5))) pulled.push(part);
    const { out, awaited } = await readAll(chatStreamParts(oneRead(5)));
    expect(out).toEqual(pulled);
    expect(out.filter((p) => p.type === 'text-delta')).toHaveLength(5);
    // stream-start, the body read's first part, the finish (made at the body's end), the end.
    expect(awaited).toBe(4);
    const count = (deltas: number) => countPromises(() => readAll(chatStreamParts(oneRead(deltas))));
    await count(1);
    expect(((await count(105)) - (await count(5))) / 100).toBeLessThan(0.05);
  });

  it('ENGINE-CPU-181: the metered model passes ready parts on, metered; the finish comes through next, after its record', async () => {
    const { parts, ends } = await meteredParts(chatStreamParts(oneRead(3)));
    const out: LanguageModelV3StreamPart[] = [];
    let finishReady = false;
    for (;;) {
      const ready = parts.ready?.();
      if (ready) {
        if (ready.type === 'finish') finishReady = true;
        out.push(ready);
        continue;
      }
      const next = await parts.next();
      if (next.done) break;
      if (next.value.type === 'finish') expect(ends).toHaveLength(1);
      out.push(next.value);
    }
    expect(finishReady).toBe(false);
    expect(out.map((p) => p.type)).toEqual([
      'stream-start',
      'response-metadata',
      'text-start',
      'text-delta',
      'text-delta',
      'text-delta',
      'text-end',
      'finish',
    ]);
    expect(ends).toMatchObject([{ status: 'ok', input_tokens: 7, output_tokens: 3, output: 'd0 d1 d2 ' }]);
    const count = async (deltas: number) => {
      const m = await meteredParts(chatStreamParts(oneRead(deltas)));
      return countPromises(() => readAll(m.parts));
    };
    await count(1);
    expect(((await count(105)) - (await count(5))) / 100).toBeLessThan(0.05);
  });

  it('ENGINE-CPU-182: the step driver takes ready parts with no promise: an answer of 100 more deltas in one read costs no more promises a delta', async () => {
    const model = (deltas: number) =>
      new MockLanguageModelV3({
        doStream: async () => resultWithParts(chatStreamParts(oneRead(deltas)), {}),
      });
    const drive = (deltas: number) => countPromises(() => driven(model(deltas)).drive(() => undefined));
    await drive(1);
    expect(((await drive(105)) - (await drive(5))) / 100).toBeLessThan(0.05);
  });

  it('ENGINE-CPU-183: a run that stops mid-read (its sink fails on a ready part) ends its drive with that error and cancels the body', async () => {
    let cancelled = false;
    const input = oneRead(5);
    const bytes = (input.body as AsyncGenerator<Uint8Array>).next();
    input.body = (async function* () {
      try {
        yield (await bytes).value as Uint8Array;
        yield new Uint8Array(0);
      } finally {
        cancelled = true;
      }
    })();
    const handed: string[] = [];
    const model = new MockLanguageModelV3({
      doStream: async () => resultWithParts(chatStreamParts(input), {}),
    });
    const outcome = await driven(model)
      .drive((part) => {
        handed.push(part.type);
        if (handed.filter((t) => t === 'text-delta').length === 2) throw new Error('recorder failed');
        return undefined;
      })
      .then(
        () => 'resolved',
        (error: Error) => error.message,
      );
    expect(outcome).toBe('recorder failed');
    expect(handed).toEqual(['start-step', 'text-delta', 'text-delta']);
    for (let i = 0; i < 10 && !cancelled; i++) await new Promise((resolve) => setImmediate(resolve));
    expect(cancelled).toBe(true);
  });

  it('ENGINE-CPU-184: a body read costs the lean reader one then: 4 promises a read with its ready parts, the body’s own read included (the async generator: 7)', async () => {
    const usageOf = () => usage;
    /** A body of `n` reads, one delta event each; its reads one resolved promise each. */
    const body = (n: number): ChatStreamInput => {
      const encoder = new TextEncoder();
      const chunks = Array.from({ length: n }, (_, i) =>
        encoder.encode(
          `data: ${JSON.stringify({ id: 'c', created: 0, model: 'm', choices: [{ index: 0, delta: { content: `d${i}` }, finish_reason: null }] })}\n\n`,
        ),
      );
      let at = 0;
      return {
        ...oneRead(0),
        convertUsage: usageOf,
        body: {
          [Symbol.asyncIterator]: () => ({
            next: () =>
              Promise.resolve(
                at < chunks.length
                  ? { done: false as const, value: chunks[at++] as Uint8Array }
                  : { done: true as const, value: undefined },
              ),
          }),
        },
      };
    };
    const read = (n: number) => countPromises(() => readAll(chatStreamParts(body(n))));
    await read(2);
    const { out } = await readAll(chatStreamParts(body(3)));
    expect(
      out.filter((p) => p.type === 'text-delta').map((p) => (p.type === 'text-delta' ? p.delta : '')),
    ).toEqual(['d0', 'd1', 'd2']);
    expect(((await read(110)) - (await read(10))) / 100).toBeLessThanOrEqual(4);
  });
});
