import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import type { LanguageModelV3, LanguageModelV3StreamPart } from '@ai-sdk/provider';
import { describe, expect, it } from 'vitest';
import { openAICompatible } from './build-request';
import { isPlainChunk, leanChunkValidation, onceComputedRequest } from './openai-compatible-lean';

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

async function partsOf(model: LanguageModelV3) {
  const { stream } = await model.doStream({
    prompt: [{ role: 'user', content: [{ type: 'text', text: 'hi' }] }],
  });
  const parts: LanguageModelV3StreamPart[] = [];
  const reader = stream.getReader();
  for (let next = await reader.read(); !next.done; next = await reader.read()) parts.push(next.value);
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
      expect(await partsOf(lean)).toEqual(await partsOf(plain));
    });
  }

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
