import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import type { LanguageModelV3, LanguageModelV3CallOptions, LanguageModelV3Prompt } from '@ai-sdk/provider';
import { describe, expect, it, vi } from 'vitest';
import { openAICompatible } from './build-request';
import { withPromptMessages } from './prompt-messages';
import { sendOnce, withSerializedTools } from './request-body';

const done = `data: ${JSON.stringify({ id: 'c', created: 1, model: 'm1', choices: [{ index: 0, delta: { content: 'ok' }, finish_reason: 'stop' }] })}\n\ndata: [DONE]\n\n`;

/** A fetch that keeps each request's body as the bytes that would go on the wire. */
function recording(into: { sent: Buffer; handed: string }[], viaSendOnce: boolean): typeof fetch {
  const answer = (): Response => new Response(done, { headers: { 'content-type': 'text/event-stream' } });
  const wire: typeof fetch = async (_input, init) => {
    const body = init?.body;
    const sent = typeof body === 'string' ? Buffer.from(body, 'utf8') : Buffer.from(body as Uint8Array);
    into.push({ sent, handed: '' });
    return answer();
  };
  if (!viaSendOnce) return wire;
  return async (input, init) => {
    const response = await sendOnce(wire, input, init ?? {});
    into[into.length - 1].handed = String(init?.body);
    return response;
  };
}

async function call(model: LanguageModelV3, params: LanguageModelV3CallOptions) {
  const { stream } = await model.doStream(params);
  const reader = stream.getReader();
  while (!(await reader.read()).done) {}
}

const schema = { type: 'object', properties: { path: { type: 'string', description: 'a path “x”' } } };
const tools: LanguageModelV3CallOptions['tools'] = [
  { type: 'function', name: 'read', description: `Read a file ${'·'.repeat(80)}`, inputSchema: schema },
];

/** A run's steps: the same message objects each step, two new ones at the end. */
function steps(): LanguageModelV3Prompt[] {
  const prompt: LanguageModelV3Prompt = [
    { role: 'system', content: 'You are svc. \u0000 “quotes” \ud800' },
    { role: 'user', content: [{ type: 'text', text: 'read a.txt' }] },
  ];
  const out: LanguageModelV3Prompt[] = [[...prompt]];
  for (let i = 0; i < 4; i++) {
    prompt.push(
      {
        role: 'assistant',
        content: [
          { type: 'reasoning', text: `think ${i}` },
          { type: 'text', text: i % 2 ? '' : 'reading' },
          { type: 'tool-call', toolCallId: `call_${i}`, toolName: 'read', input: { path: `a${i}.txt` } },
          { type: 'tool-call', toolCallId: `call_${i}b`, toolName: 'read', input: '{"path":"b"}' },
        ],
      },
      {
        role: 'tool',
        content: [
          {
            type: 'tool-result',
            toolCallId: `call_${i}`,
            toolName: 'read',
            output: { type: 'text', value: `línea ${i}\n` },
          },
          {
            type: 'tool-result',
            toolCallId: `call_${i}b`,
            toolName: 'read',
            output: { type: 'json', value: { n: i } },
          },
        ],
      },
    );
    if (i === 2)
      prompt.push({
        role: 'user',
        content: [
          { type: 'text', text: 'a' },
          { type: 'text', text: 'b' },
        ],
      });
    out.push([...prompt]);
  }
  return out;
}

describe('prompt messages converted and encoded once per run', () => {
  it('STEP2-PROMPT-1 sends the bytes the SDK sends, step after step, with each message encoded once', async () => {
    const plainSeen: { sent: Buffer; handed: string }[] = [];
    const cachedSeen: { sent: Buffer; handed: string }[] = [];
    const settings = { apiKey: 'k', headers: { 'X-Team': 'a' } };
    const plain = createOpenAICompatible({
      name: 'fake',
      baseURL: 'http://127.0.0.1:1/v1/',
      includeUsage: true,
      ...settings,
      fetch: recording(plainSeen, false),
    })('m1');
    const inner = await openAICompatible({ id: 'fake', base_url: 'http://127.0.0.1:1/v1/' }, 'm1', {
      ...settings,
      fetch: recording(cachedSeen, true),
    });
    const marked = withPromptMessages(inner);
    expect(marked).not.toBe(inner);
    // A wrapper: the SDK's model itself is left as it was.
    expect(Object.hasOwn(inner, 'doGenerate')).toBe(false);
    const cached = withSerializedTools(marked);
    // Two runs at once, their steps interleaved (the compat surface), then one step asked again.
    const [one, two] = [steps(), steps()];
    const order = one.flatMap((prompt, i) => [prompt, two[i]]);
    for (const prompt of [...order, one[2]]) {
      await call(plain, { prompt, tools });
      await call(cached, { prompt, tools });
    }
    expect(cachedSeen).toHaveLength(plainSeen.length);
    for (let i = 0; i < plainSeen.length; i++)
      expect(cachedSeen[i].sent.toString('utf8')).toBe(plainSeen[i].sent.toString('utf8'));
    // What the SDK encoded itself on the last step: markers, not the history's text.
    const last = cachedSeen[cachedSeen.length - 2].handed;
    expect(last).not.toContain('read a.txt');
    expect(last).not.toContain('línea');
    expect(plainSeen[plainSeen.length - 2].sent.toString('utf8')).toContain('línea 0');
  });

  it('STEP2-PROMPT-3 takes the last step’s markers for the same leading messages, and only for them', async () => {
    const plainSeen: { sent: Buffer; handed: string }[] = [];
    const cachedSeen: { sent: Buffer; handed: string }[] = [];
    const base = 'http://127.0.0.1:1/v1/';
    const plain = createOpenAICompatible({
      name: 'fake',
      baseURL: base,
      includeUsage: true,
      fetch: recording(plainSeen, false),
    })('m1');
    const inner = await openAICompatible({ id: 'fake', base_url: base }, 'm1', {
      fetch: recording(cachedSeen, true),
    });
    const cached = withSerializedTools(withPromptMessages(inner));
    const user = (text: string): LanguageModelV3Prompt[number] => ({
      role: 'user',
      content: [{ type: 'text', text }],
    });
    // One array the caller keeps adding to, and changes in place (a message replaced by another).
    const prompt: LanguageModelV3Prompt = [{ role: 'system', content: 'sys' }];
    for (let i = 0; i < 200; i++) prompt.push(user(`m${i}`));
    const lookups = vi.spyOn(WeakMap.prototype, 'get');
    await call(cached, { prompt, tools });
    const first = lookups.mock.calls.length;
    prompt.push(user('next'));
    lookups.mockClear();
    await call(cached, { prompt, tools });
    // The 201 messages of the last step are not looked up again (the new one and the fetch's are).
    expect(first).toBeGreaterThan(200);
    expect(lookups.mock.calls.length).toBeLessThan(50);
    lookups.mockRestore();
    prompt[100] = user('replaced');
    prompt.splice(150, 1);
    await call(cached, { prompt, tools });
    await call(plain, { prompt, tools });
    const sent = cachedSeen[cachedSeen.length - 1].sent.toString('utf8');
    expect(sent).toBe(plainSeen[plainSeen.length - 1].sent.toString('utf8'));
    expect(sent).toContain('replaced');
    expect(sent).not.toContain('"m99"');
    expect(sent).not.toContain('"m149"');
  });

  it('STEP2-PROMPT-2 leaves a model without the SDK conversion alone', () => {
    const model = {
      specificationVersion: 'v3',
      provider: 'x',
      modelId: 'm',
      supportedUrls: {},
    } as unknown as LanguageModelV3;
    expect(withPromptMessages(model)).toBe(model);
  });
});
