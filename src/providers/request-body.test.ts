import { createServer } from 'node:http';
import type { LanguageModelV3, LanguageModelV3CallOptions } from '@ai-sdk/provider';
import { describe, expect, it } from 'vitest';
import { requestBody, sendOnce, withSerializedTools } from './request-body';

const long = (text: string) => `${text} ${'·'.repeat(80)}`;

const finished = { unified: 'stop', raw: undefined } as const;
const usage = {
  inputTokens: { total: 0, noCache: 0, cacheRead: 0, cacheWrite: 0 },
  outputTokens: { total: 0, text: 0, reasoning: 0 },
};

/** A model that records what it was called with and builds an OpenAI-style body from it. */
function recordingModel() {
  const calls: LanguageModelV3CallOptions[] = [];
  const model = {
    specificationVersion: 'v3',
    provider: 'fake.chat',
    modelId: 'm1',
    supportedUrls: {},
    doGenerate: async (params: LanguageModelV3CallOptions) => {
      calls.push(params);
      return { content: [], finishReason: finished, usage, warnings: [] };
    },
    doStream: async (params: LanguageModelV3CallOptions) => {
      calls.push(params);
      return { stream: new ReadableStream() };
    },
  } satisfies LanguageModelV3;
  return { model, calls };
}

const bodyOf = (params: LanguageModelV3CallOptions, text: string) =>
  JSON.stringify({
    model: 'm1',
    messages: [{ role: 'user', content: text }],
    tools: params.tools?.map((tool) =>
      tool.type === 'function'
        ? {
            type: 'function',
            function: { name: tool.name, description: tool.description, parameters: tool.inputSchema },
          }
        : tool,
    ),
  });

const json = { 'content-type': 'application/json' };

describe('request bodies with tool schemas encoded once', () => {
  it('sends the same bytes as the plain request, for every call with the same tools', async () => {
    const { model, calls } = recordingModel();
    const wrapped = withSerializedTools(model);
    expect(wrapped.provider).toBe('fake.chat');
    const schema = { type: 'object', properties: { path: { type: 'string', description: 'a path → “x”' } } };
    const params: LanguageModelV3CallOptions = {
      prompt: [],
      tools: [
        { type: 'function', name: 'read', description: long('Read a file…'), inputSchema: schema },
        { type: 'function', name: 'short', description: 'tiny', inputSchema: { type: 'object' } },
      ],
    };
    // A message that looks like a marker stays text (its quotes are escaped in the body).
    const text = `hello {"$svcSchema":0} \u0000 \ud800 ${'x'.repeat(2000)}`;
    for (let i = 0; i < 2; i++) {
      await wrapped.doStream(params);
      const sent = requestBody({ body: bodyOf(calls[i], text), headers: json }) as Buffer;
      expect(Buffer.isBuffer(sent)).toBe(true);
      expect(sent.equals(Buffer.from(bodyOf(params, text), 'utf8'))).toBe(true);
    }
    expect(JSON.stringify(calls[0].tools)).not.toContain('Read a file');
  });

  it('sends the same bytes when steps change the messages, the tool set or its order', async () => {
    const { model, calls } = recordingModel();
    const wrapped = withSerializedTools(model);
    const tool = (name: string, n: number): LanguageModelV3CallOptions['tools'] => [
      {
        type: 'function',
        name,
        description: long(`Tool ${name} ✓`),
        inputSchema: { type: 'object', properties: { [`p${n}`]: { type: 'string' } } },
      },
    ];
    const sets = [
      [...tool('a', 1)!, ...tool('b', 2)!],
      [...tool('b', 2)!, ...tool('a', 1)!],
      [...tool('a', 1)!, ...tool('b', 2)!, ...tool('c', 3)!],
      tool('a', 1)!,
      [...tool('a', 1)!, ...tool('b', 2)!],
    ];
    // Every set twice, with a history that grows on every step (as in a run).
    const steps = sets.flatMap((set) => [set, set]);
    for (const [i, tools] of steps.entries()) {
      const params: LanguageModelV3CallOptions = { prompt: [], tools };
      await wrapped.doStream(params);
      const text = `step ${i} “é” ${'m'.repeat(1500 * i)}`;
      const sent = requestBody({ body: bodyOf(calls[i], text), headers: json }) as Buffer;
      expect(sent.equals(Buffer.from(bodyOf(params, text), 'utf8'))).toBe(true);
    }
  });

  it('leaves small bodies, bodies without a content type and non-string bodies alone', () => {
    const big = 'y'.repeat(4000);
    expect(requestBody({ body: 'small', headers: json })).toBe('small');
    expect(requestBody({ body: big })).toBe(big);
    expect(requestBody({ body: big, headers: [['Content-Type', 'application/json']] })).toBeInstanceOf(
      Buffer,
    );
    const bytes = new Uint8Array([1, 2]);
    expect(requestBody({ body: bytes, headers: json })).toBe(bytes);
    expect(requestBody(undefined)).toBeUndefined();
  });

  it('replaces the markers of a small body too, and follows a redirect with the same body', async () => {
    const { model, calls } = recordingModel();
    const schema = { type: 'object', properties: {} };
    const params: LanguageModelV3CallOptions = {
      prompt: [],
      tools: [{ type: 'function', name: 'one', description: long('One tool'), inputSchema: schema }],
    };
    await withSerializedTools(model).doStream(params);
    const marked = bodyOf(calls[0], 'hi');
    const plain = bodyOf(params, 'hi');
    expect(marked.length).toBeLessThan(1024);
    expect(Buffer.from(requestBody({ body: marked }) as Buffer).toString('utf8')).toBe(plain);

    const received: { url: string; body: string }[] = [];
    const server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c) => chunks.push(c));
      req.on('end', () => {
        received.push({ url: req.url ?? '', body: Buffer.concat(chunks).toString('utf8') });
        if (req.url === '/moved') res.writeHead(307, { location: '/here' }).end();
        else res.writeHead(200).end('ok');
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as { port: number };
    try {
      for (const path of ['/here', '/moved']) {
        const response = await sendOnce(fetch, `http://127.0.0.1:${port}${path}`, {
          method: 'POST',
          headers: json,
          body: marked,
        });
        expect(await response.text()).toBe('ok');
      }
    } finally {
      server.close();
    }
    expect(received.map((r) => r.url)).toEqual(['/here', '/moved', '/moved', '/here']);
    expect(received.map((r) => r.body === plain)).toEqual([true, true, true, true]);
  });
});
