/**
 * svc's own OpenAI-compatible chat request (./openai-compatible-request.ts) against the SDK's.
 * Pins: for every call in the matrix the URL, method, headers and body bytes are the SDK's; the
 * calls svc covers skip the SDK's `getArgs`, the others take it; a failed answer or fetch gives
 * the SDK's error.
 */
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import type { LanguageModelV3, LanguageModelV3CallOptions, LanguageModelV3Prompt } from '@ai-sdk/provider';
import { describe, expect, it } from 'vitest';
import { openAICompatible } from './build-request';
import { withPromptMessages } from './prompt-messages';
import { sendOnce, withSerializedTools } from './request-body';

const answer = [
  'data: {"id":"c1","created":1,"model":"m1","choices":[{"index":0,"delta":{"role":"assistant","content":"ok"},"finish_reason":null}]}',
  'data: {"id":"c1","created":1,"model":"m1","choices":[{"index":0,"delta":{},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":1,"total_tokens":4}}',
  'data: [DONE]',
  '',
].join('\n\n');

interface Sent {
  url: string;
  method: unknown;
  headers: unknown;
  body: unknown;
}

const recording =
  (into: Sent[], reply: () => Promise<Response> = async () => sse()): typeof fetch =>
  async (input, init) => {
    into.push({ url: String(input), method: init?.method, headers: init?.headers, body: init?.body });
    return reply();
  };
const sse = () => new Response(answer, { headers: { 'content-type': 'text/event-stream' } });

const settings = { apiKey: 'k-1', headers: { 'X-Team': 'a' } };
const baseURL = 'http://127.0.0.1:1/v1/';

/** The SDK's own model and svc's, each with its fetch; `getArgs` calls of svc's counted. */
async function models(fetches: [typeof fetch, typeof fetch]) {
  const plain = createOpenAICompatible({
    name: 'fake',
    baseURL,
    includeUsage: true,
    ...settings,
    fetch: fetches[0],
  })('m1');
  const lean = await openAICompatible({ id: 'fake', base_url: baseURL }, 'm1', {
    ...settings,
    fetch: fetches[1],
  });
  const counted = { getArgs: 0 };
  const getArgs = Reflect.get(lean, 'getArgs') as (...args: unknown[]) => unknown;
  Reflect.set(lean, 'getArgs', function (this: unknown, ...args: unknown[]) {
    counted.getArgs++;
    return getArgs.apply(this, args);
  });
  return { plain, lean, counted };
}

async function read(model: LanguageModelV3, call: LanguageModelV3CallOptions) {
  const result = await model.doStream(call);
  const reader = result.stream.getReader();
  while (!(await reader.read()).done);
  return result.request?.body;
}

const tools: LanguageModelV3CallOptions['tools'] = [
  {
    type: 'function',
    name: 'read',
    description: 'Read a file.',
    inputSchema: { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] },
  },
  { type: 'function', name: 'list', inputSchema: { type: 'object', properties: {} }, strict: true },
];

const history: LanguageModelV3Prompt = [
  { role: 'system', content: 'You are svc.' },
  {
    role: 'user',
    content: [
      { type: 'text', text: 'first' },
      {
        type: 'text',
        text: 'second',
        providerOptions: { openaiCompatible: { cache_control: { type: 'x' } } },
      },
    ],
  },
  {
    role: 'assistant',
    content: [
      { type: 'reasoning', text: 'thinking' },
      { type: 'text', text: 'calling' },
      { type: 'tool-call', toolCallId: 'c1', toolName: 'read', input: { path: 'a.txt' } },
      { type: 'tool-call', toolCallId: 'c2', toolName: 'list', input: '{"x":1}' },
      {
        type: 'tool-call',
        toolCallId: 'c3',
        toolName: 'list',
        input: 'not json',
        providerOptions: { google: { thoughtSignature: 'sig' } },
      },
    ],
  },
  {
    role: 'tool',
    content: [
      { type: 'tool-result', toolCallId: 'c1', toolName: 'read', output: { type: 'text', value: 'ü ✓ "q"' } },
      {
        type: 'tool-result',
        toolCallId: 'c2',
        toolName: 'list',
        output: { type: 'json', value: { a: [1, 2] } },
      },
      {
        type: 'tool-result',
        toolCallId: 'c3',
        toolName: 'list',
        output: { type: 'error-text', value: 'no' },
      },
      {
        type: 'tool-result',
        toolCallId: 'c4',
        toolName: 'list',
        output: { type: 'error-json', value: { e: 1 } },
      },
      { type: 'tool-result', toolCallId: 'c5', toolName: 'list', output: { type: 'execution-denied' } },
      {
        type: 'tool-result',
        toolCallId: 'c6',
        toolName: 'list',
        output: { type: 'content', value: [{ type: 'text', text: 'x' }] },
      },
      { type: 'tool-approval-response', approvalId: 'p1', approved: true },
    ],
  },
  {
    role: 'assistant',
    content: [{ type: 'text', text: 'done' }],
    providerOptions: { openaiCompatible: { name: 'n' } },
  },
  { role: 'user', content: [{ type: 'text', text: 'again' }] },
];

const hi: LanguageModelV3Prompt = [{ role: 'user', content: [{ type: 'text', text: 'hi' }] }];

/** Calls svc builds itself. */
const covered: Record<string, LanguageModelV3CallOptions> = {
  'one user message': { prompt: hi },
  'a history with reasoning, tool calls and every tool result': { prompt: history },
  'tools, tool choice auto': { prompt: hi, tools, toolChoice: { type: 'auto' } },
  'tools, tool choice required': { prompt: hi, tools, toolChoice: { type: 'required' } },
  'tools, tool choice none': { prompt: hi, tools, toolChoice: { type: 'none' } },
  'tools, one tool named': { prompt: hi, tools, toolChoice: { type: 'tool', toolName: 'read' } },
  'tools without a tool choice': { prompt: hi, tools },
  'an empty tool list': { prompt: hi, tools: [], toolChoice: { type: 'auto' } },
  'sampling settings': {
    prompt: hi,
    temperature: 0.2,
    maxOutputTokens: 100,
    stopSequences: ['END'],
    topP: 0.9,
    seed: 7,
    frequencyPenalty: 0.1,
    presencePenalty: 0.3,
  },
  'a text response format': { prompt: hi, responseFormat: { type: 'text' } },
  "another provider's options": { prompt: hi, providerOptions: { anthropic: { cacheControl: true } } },
  'empty call headers': { prompt: hi, headers: {} },
};

/** Calls the SDK builds (svc hands them over). */
const handedOver: Record<string, LanguageModelV3CallOptions> = {
  'reasoning effort (provider options)': {
    prompt: hi,
    providerOptions: { fake: { reasoningEffort: 'high' } },
  },
  'an extra body field (provider options)': { prompt: hi, providerOptions: { fake: { top_k_extra: 3 } } },
  'openaiCompatible options': { prompt: hi, providerOptions: { openaiCompatible: { user: 'u-1' } } },
  'topK (a warning)': { prompt: hi, topK: 3 },
  'a JSON response format': { prompt: hi, responseFormat: { type: 'json' } },
  'call headers': { prompt: hi, headers: { 'X-Call': '1' } },
  'an image': {
    prompt: [
      {
        role: 'user',
        content: [
          { type: 'text', text: 'look' },
          { type: 'file', mediaType: 'image/png', data: new Uint8Array([1, 2, 3]) },
        ],
      },
    ],
  },
  'a provider tool': {
    prompt: hi,
    tools: [{ type: 'provider', id: 'x.search', name: 'search', args: {} }],
  },
};

describe('svc-built OpenAI-compatible chat requests', () => {
  for (const [name, call] of Object.entries(covered))
    it(`ENGINE-CPU-70: sends the SDK's URL, headers and bytes without its getArgs: ${name}`, async () => {
      const sent: [Sent[], Sent[]] = [[], []];
      const { plain, lean, counted } = await models([recording(sent[0]), recording(sent[1])]);
      const bodies = [await read(plain, call), await read(plain, call)];
      expect([await read(lean, call), await read(lean, call)]).toStrictEqual(bodies);
      expect(sent[1]).toEqual(sent[0]);
      expect(sent[1]).toHaveLength(2);
      expect(typeof sent[1][0].body).toBe('string');
      expect(counted.getArgs).toBe(0);
    });

  for (const [name, call] of Object.entries(handedOver))
    it(`ENGINE-CPU-71: hands a call it does not cover to the SDK, same request: ${name}`, async () => {
      const sent: [Sent[], Sent[]] = [[], []];
      const { plain, lean, counted } = await models([recording(sent[0]), recording(sent[1])]);
      expect(await read(lean, call)).toEqual(await read(plain, call));
      expect(sent[1]).toEqual(sent[0]);
      expect(counted.getArgs).toBe(1);
    });

  it('ENGINE-CPU-72: a failed answer, a failed fetch and an abort give the SDK’s errors', async () => {
    const failures: Record<string, () => Promise<Response>> = {
      'a 429': async () =>
        new Response(JSON.stringify({ error: { message: 'slow down', type: 'rate_limit' } }), {
          status: 429,
          headers: { 'content-type': 'application/json', 'retry-after': '2' },
        }),
      'a 500 that is not JSON': async () => new Response('boom', { status: 500 }),
      'a 200 without a body': async () => new Response(null, { status: 200 }),
      'a refused connection': async () => {
        throw new TypeError('fetch failed', { cause: new Error('ECONNREFUSED') });
      },
      'an abort': async () => {
        throw new DOMException('This operation was aborted', 'AbortError');
      },
    };
    for (const [name, reply] of Object.entries(failures)) {
      const sent: [Sent[], Sent[]] = [[], []];
      const { plain, lean, counted } = await models([recording(sent[0], reply), recording(sent[1], reply)]);
      const errorOf = (model: LanguageModelV3) =>
        model.doStream({ prompt: hi, tools }).then(
          () => ({ resolved: true }),
          (error: Record<string, unknown>) => ({
            name: error.name,
            message: error.message,
            statusCode: error.statusCode,
            isRetryable: error.isRetryable,
            responseBody: error.responseBody,
            responseHeaders: error.responseHeaders,
            requestBodyValues: error.requestBodyValues,
            cause: String(error.cause),
          }),
        );
      expect({ name, error: await errorOf(lean) }).toEqual({ name, error: await errorOf(plain) });
      expect(sent[1]).toEqual(sent[0]);
      expect(counted.getArgs).toBe(0);
    }
  });

  it('ENGINE-CPU-73: a tool list handed again is marked and put in wire form once', async () => {
    const seen: unknown[] = [];
    const { lean } = await models([recording([]), recording([])]);
    const inner: LanguageModelV3 = {
      specificationVersion: 'v3',
      provider: lean.provider,
      modelId: lean.modelId,
      supportedUrls: {},
      doGenerate: lean.doGenerate.bind(lean),
      doStream: (options) => {
        seen.push(options.tools);
        return lean.doStream(options);
      },
    };
    const wrapped = withSerializedTools(inner);
    const call = { prompt: hi, tools, toolChoice: { type: 'auto' as const } };
    const first = (await read(wrapped, call)) as { tools: unknown };
    const second = (await read(wrapped, { ...call, prompt: history })) as { tools: unknown };
    const marked = seen;
    expect(marked).toHaveLength(2);
    expect(marked[1]).toBe(marked[0]);
    expect(marked[0]).not.toBe(tools);
    expect(second.tools).toBe(first.tools);
    // A different list (the same tools in another order) is its own.
    const third = (await read(wrapped, { ...call, tools: [...(tools ?? [])].reverse() })) as {
      tools: unknown[];
    };
    expect(third.tools).not.toBe(first.tools);
    expect(third.tools.map((tool) => (tool as { function: { name: string } }).function.name)).toEqual([
      'list',
      'read',
    ]);
  });

  it('ENGINE-CPU-74: svc’s model converts a new prompt’s messages itself and sends them in the call’s own turn, the SDK’s bytes', async () => {
    const sent: [Sent[], Sent[]] = [[], []];
    const wire = recording(sent[1]);
    const { plain, lean, counted } = await models([
      recording(sent[0]),
      (input, init) => sendOnce(wire, input, init ?? {}),
    ]);
    const model = withSerializedTools(withPromptMessages(lean));
    for (let i = 0; i < 3; i++) {
      // New message objects each time, as a compat request's fresh session has.
      const prompt = structuredClone(history);
      const pending = model.doStream({ prompt, tools, toolChoice: { type: 'auto' } });
      // The request has gone to fetch before the call returned.
      expect(sent[1]).toHaveLength(i + 1);
      const reader = (await pending).stream.getReader();
      while (!(await reader.read()).done);
      await read(plain, { prompt, tools, toolChoice: { type: 'auto' } });
    }
    const text = (body: unknown) =>
      typeof body === 'string' ? body : Buffer.from(body as Uint8Array).toString('utf8');
    expect(sent[1].map((request) => text(request.body))).toEqual(
      sent[0].map((request) => text(request.body)),
    );
    expect(sent[1].map(({ url, headers }) => ({ url, headers }))).toEqual(
      sent[0].map(({ url, headers }) => ({ url, headers })),
    );
    expect(counted.getArgs).toBe(0);
  });
});
