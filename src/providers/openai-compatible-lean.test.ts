import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import type { LanguageModelV3, LanguageModelV3StreamPart } from '@ai-sdk/provider';
import { describe, expect, it } from 'vitest';
import { openAICompatible } from './build-request';
import {
  isPlainChunk,
  leanChunkValidation,
  leanStreaming,
  onceComputedRequest,
} from './openai-compatible-lean';
import { streamParts } from './stream-parts';

const base = { id: 'c1', object: 'chat.completion.chunk', created: 1_700_000_000, model: 'm1' };
const chunk = (delta: unknown, finish: string | null = null, extra: Record<string, unknown> = {}) => ({
  ...base,
  choices: [{ index: 0, delta, finish_reason: finish }],
  ...extra,
});
const usage = {
  usage: {
    prompt_tokens: 100,
    completion_tokens: 10,
    total_tokens: 110,
    prompt_tokens_details: { cached_tokens: 20 },
    completion_tokens_details: { reasoning_tokens: 3 },
  },
};

/** Streams of chunks (objects, or raw `data:` text) the two models must turn into the same parts. */
const streams: Record<string, unknown[]> = {
  text: [chunk({ role: 'assistant', content: 'Hel' }), chunk({ content: 'lo' }), chunk({}, 'stop', usage)],
  reasoning: [
    chunk({ role: 'assistant', reasoning_content: 'think' }),
    chunk({ reasoning: 'ing' }),
    chunk({ content: [{ type: 'text', text: 'answer' }] }),
    chunk({}, 'stop'),
  ],
  'tool calls': [
    chunk({
      role: 'assistant',
      tool_calls: [{ index: 0, id: 'call_1', type: 'function', function: { name: 'read', arguments: '' } }],
    }),
    chunk({ tool_calls: [{ index: 0, function: { arguments: '{"path":' } }] }),
    chunk({ tool_calls: [{ index: 0, function: { arguments: '"a.txt"}' } }] }),
    chunk({
      tool_calls: [
        {
          index: 1,
          id: 'call_2',
          function: { name: 'list', arguments: '{}' },
          extra_content: { google: { thought_signature: 'sig' } },
        },
      ],
    }),
    chunk({}, 'tool_calls', usage),
  ],
  refusal: [chunk({ refusal: 'no' }), chunk({}, 'stop')],
  'refusal that is not a string': [chunk({ refusal: false, content: 'x' }), chunk({}, 'stop')],
  'error chunk': [chunk({ content: 'a' }), { error: { message: 'overloaded', type: 'server_error' } }],
  'wrong types': [chunk({ content: 'a' }), chunk({ content: 5 }), { choices: 'x' }, chunk({}, 'stop')],
  'no finish': [chunk({ content: 'a' })],
  'broken json': [chunk({ content: 'a' }), 'data: {"choices": [', chunk({}, 'stop')],
  'a __proto__ key': [
    chunk({ content: 'a' }),
    'data: {"__proto__": {"x": 1}, "choices": []}',
    chunk({}, 'stop'),
  ],
};

function sse(items: unknown[]): string {
  return `${items.map((item) => (typeof item === 'string' ? `${item}\n\n` : `data: ${JSON.stringify(item)}\n\n`)).join('')}data: [DONE]\n\n`;
}

const fetchOf = (body: string): typeof fetch =>
  (async () => new Response(body, { headers: { 'content-type': 'text/event-stream' } })) as typeof fetch;

function headersOf(init: RequestInit['headers']): Record<string, string> {
  const out: Record<string, string> = {};
  new Headers(init).forEach((value, name) => {
    out[name] = value;
  });
  return out;
}

const hi = { prompt: [{ role: 'user' as const, content: [{ type: 'text' as const, text: 'hi' }] }] };

/** The model's parts, read from its stream, or from its parts iterator when it offers one. */
async function partsOf(model: LanguageModelV3, via: 'stream' | 'iterator' = 'stream') {
  const result = await model.doStream(hi);
  const parts: LanguageModelV3StreamPart[] = [];
  if (via === 'iterator') {
    const iterator = streamParts(result);
    if (!iterator) throw new Error('the model offers no parts iterator');
    for (let next = await iterator.next(); !next.done; next = await iterator.next()) parts.push(next.value);
  } else {
    const reader = result.stream.getReader();
    for (let next = await reader.read(); !next.done; next = await reader.read()) parts.push(next.value);
  }
  return JSON.parse(
    JSON.stringify(parts, (_key, value) =>
      value instanceof Error ? { error: value.name, message: value.message } : value,
    ),
  );
}

describe('lean validation of OpenAI-compatible stream chunks', () => {
  it('applies to the model svc builds with the SDK version it ships', async () => {
    const model = await openAICompatible({ id: 'fake', base_url: 'http://127.0.0.1:1/v1' }, 'm1', {
      fetch: fetchOf(''),
    });
    expect(leanChunkValidation(model)).toBe(true);
    expect(onceComputedRequest(model)).toBe(true);
    expect(leanStreaming(model)).toBe(true);
    expect(Reflect.get(Reflect.get(model, 'chunkSchema'), '_zod')).toBeUndefined();
  });

  for (const [name, items] of Object.entries(streams)) {
    it(`gives the SDK's own parts for a stream: ${name}`, async () => {
      const body = sse(items);
      const plain = createOpenAICompatible({
        name: 'fake',
        baseURL: 'http://127.0.0.1:1/v1',
        includeUsage: true,
        fetch: fetchOf(body),
      })('m1');
      const lean = await openAICompatible({ id: 'fake', base_url: 'http://127.0.0.1:1/v1' }, 'm1', {
        fetch: fetchOf(body),
      });
      const expected = await partsOf(plain);
      expect(await partsOf(lean)).toEqual(expected);
      expect(await partsOf(lean, 'iterator')).toEqual(expected);
    });
  }

  it('ENGINE-CPU-23: a chunk of the fixed shape is taken without the schema call (no promise), others still go through it', async () => {
    const body = sse(streams['wrong types'] as unknown[]);
    const lean = await openAICompatible({ id: 'fake', base_url: 'http://127.0.0.1:1/v1' }, 'm1', {
      fetch: fetchOf(body),
    });
    const schema = Reflect.get(lean, 'chunkSchema') as { validate(value: unknown): unknown };
    const validate = schema.validate;
    const validated: unknown[] = [];
    schema.validate = (value) => {
      validated.push(value);
      return validate(value);
    };
    const plain = createOpenAICompatible({
      name: 'fake',
      baseURL: 'http://127.0.0.1:1/v1',
      includeUsage: true,
      fetch: fetchOf(body),
    })('m1');
    expect(await partsOf(lean, 'iterator')).toEqual(await partsOf(plain));
    // Of the four chunks, the two of the fixed shape never reach the schema.
    expect(validated).toEqual([chunk({ content: 5 }), { choices: 'x' }]);
  });

  it('sends the requests the SDK sends: URL, headers and body, call after call', async () => {
    const seen: { url: string; headers: Record<string, string>; body: unknown }[][] = [[], []];
    const recording =
      (into: (typeof seen)[number]): typeof fetch =>
      async (input, init) => {
        into.push({
          url: String(input),
          headers: headersOf(init?.headers),
          body: init?.body,
        });
        return new Response(sse(streams.text), { headers: { 'content-type': 'text/event-stream' } });
      };
    const settings = { apiKey: 'k-1', headers: { 'X-Team': 'a', 'User-Agent': 'svc/1' } };
    const plain = createOpenAICompatible({
      name: 'fake',
      baseURL: 'http://127.0.0.1:1/v1/',
      includeUsage: true,
      ...settings,
      fetch: recording(seen[0]),
    })('m1');
    const lean = await openAICompatible({ id: 'fake', base_url: 'http://127.0.0.1:1/v1/' }, 'm1', {
      ...settings,
      fetch: recording(seen[1]),
    });
    for (const model of [plain, lean]) {
      await partsOf(model);
      await partsOf(model);
    }
    expect(seen[1]).toEqual(seen[0]);
    expect(seen[1]).toHaveLength(2);
    expect(seen[1][1].headers.authorization).toBe('Bearer k-1');
  });

  it('takes only chunks of the fixed shape without zod', () => {
    expect(isPlainChunk(chunk({ content: 'a' }))).toBe(true);
    expect(isPlainChunk(chunk({}, 'stop', usage))).toBe(true);
    expect(isPlainChunk({ ...chunk({ content: 'a' }), error: { message: 'x' } })).toBe(false);
    expect(isPlainChunk(chunk({ refusal: false }))).toBe(false);
    expect(isPlainChunk(chunk({ role: 'user' }))).toBe(false);
    expect(isPlainChunk(chunk({ tool_calls: [{ index: 0 }] }))).toBe(false);
    expect(isPlainChunk({ ...chunk({}), usage: { prompt_tokens: '1' } })).toBe(false);
    expect(isPlainChunk({ choices: [null] })).toBe(false);
    expect(isPlainChunk([])).toBe(false);
  });
});

/** A body of these bytes, cut into chunks of the sizes given (in turn); `hold`: then it waits. */
function chunkedBody(bytes: Uint8Array, sizes: number[], hold = false) {
  let at = 0;
  let n = 0;
  const state = { cancelled: false, controller: undefined as ReadableStreamDefaultController | undefined };
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      state.controller = controller;
    },
    pull(controller) {
      if (at >= bytes.length) {
        if (!hold) controller.close();
        return hold ? new Promise(() => {}) : undefined;
      }
      const size = sizes[n++ % sizes.length];
      controller.enqueue(bytes.slice(at, at + size));
      at += size;
    },
    cancel() {
      state.cancelled = true;
    },
  });
  return { body, state };
}

describe('ENGINE-STEP-STREAM: the OpenAI-compatible answer read without web streams', () => {
  const text = [
    chunk({ role: 'assistant', content: 'línea ✓ — 😀 ' }),
    chunk({ content: 'ß東京' }),
    chunk({ tool_calls: [{ index: 0, id: 'c1', function: { name: 'read', arguments: '{"p":"é😀"}' } }] }),
    chunk({}, 'tool_calls', usage),
  ];

  it('ENGINE-STEP-STREAM-1 gives the same parts with the body cut at any byte (UTF-8 split, [DONE])', async () => {
    const whole = sse(text);
    const plain = createOpenAICompatible({
      name: 'fake',
      baseURL: 'http://127.0.0.1:1/v1',
      includeUsage: true,
      fetch: fetchOf(whole),
    })('m1');
    const expected = await partsOf(plain);
    expect(JSON.stringify(expected)).toContain('😀');
    const bytes = new TextEncoder().encode(whole);
    for (const sizes of [[1], [2], [3], [5, 1, 7], [64]]) {
      const lean = await openAICompatible({ id: 'fake', base_url: 'http://127.0.0.1:1/v1' }, 'm1', {
        fetch: (async () =>
          new Response(chunkedBody(bytes, sizes).body, {
            headers: { 'content-type': 'text/event-stream' },
          })) as typeof fetch,
      });
      expect(await partsOf(lean, 'iterator'), `chunks of ${sizes}`).toEqual(expected);
    }
  });

  it('ENGINE-STEP-STREAM-2 an error event is an error part and the stream goes on to its finish', async () => {
    const items = [chunk({ content: 'a' }), { error: { message: 'overloaded', type: 'server_error' } }];
    const lean = await openAICompatible({ id: 'fake', base_url: 'http://127.0.0.1:1/v1' }, 'm1', {
      fetch: fetchOf(`${sse(items)}data: [DONE]\n\n`),
    });
    const parts = await partsOf(lean, 'iterator');
    const types = parts.map((part: { type: string }) => part.type);
    expect(types).toContain('error');
    expect(types[types.length - 1]).toBe('finish');
    expect(parts.find((part: { type: string }) => part.type === 'finish').finishReason.unified).toBe('error');
  });

  it('ENGINE-STEP-STREAM-3 an abort mid-stream rejects the next read with the abort; leaving early cancels the body', async () => {
    const bytes = new TextEncoder().encode(`data: ${JSON.stringify(chunk({ content: 'a' }))}\n\n`);
    let held: ReturnType<typeof chunkedBody> | undefined;
    const fetchFn = (async (_input: unknown, init?: RequestInit) => {
      held = chunkedBody(bytes, [bytes.length], true);
      const state = held.state;
      init?.signal?.addEventListener('abort', () => state.controller?.error(init.signal?.reason));
      return new Response(held.body, { headers: { 'content-type': 'text/event-stream' } });
    }) as typeof fetch;
    const lean = await openAICompatible({ id: 'fake', base_url: 'http://127.0.0.1:1/v1' }, 'm1', {
      fetch: fetchFn,
    });
    const abort = new AbortController();
    const parts = streamParts(await lean.doStream({ ...hi, abortSignal: abort.signal }));
    if (!parts) throw new Error('no parts iterator');
    const seen: string[] = [];
    for (let next = await parts.next(); !next.done; next = await parts.next()) {
      seen.push(next.value.type);
      if (next.value.type === 'text-delta') break;
    }
    expect(seen).toEqual(['stream-start', 'response-metadata', 'text-start', 'text-delta']);
    const pending = parts.next();
    abort.abort();
    await expect(pending).rejects.toMatchObject({ name: 'AbortError' });

    const early = streamParts(await lean.doStream(hi));
    if (!early) throw new Error('no parts iterator');
    await early.next();
    await early.next();
    await early.return?.();
    expect(held?.state.cancelled).toBe(true);
  });
});
