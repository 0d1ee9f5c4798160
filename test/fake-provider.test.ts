/**
 * The fake provider speaks each wire format well enough for the real AI SDK provider packages:
 * a tool call then text, streaming and not, through OpenAI chat, Anthropic messages and Google
 * generateContent.
 */
import { generateText, stepCountIs, streamText, tool } from 'ai';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { fakeProvider, reply } from './helpers/fake-provider';
import { makeTestApp } from './helpers/make-test-app';

const wires = [
  { type: 'openai-compat', url: (p: { url: string }) => p.url },
  { type: 'openai', url: (p: { url: string }) => p.url },
  { type: 'anthropic', url: (p: { anthropicUrl: string }) => p.anthropicUrl },
  { type: 'google', url: (p: { googleUrl: string }) => p.googleUrl },
] as const;

describe('fake provider through the AI SDK', () => {
  for (const wire of wires) {
    for (const streaming of [true, false]) {
      it(`${wire.type} ${streaming ? 'streaming' : 'non-streaming'}: tool call, tool result, text`, async () => {
        const provider = await fakeProvider([
          reply().toolCall('get_weather', { city: 'Paris' }),
          reply().text('It is sunny in Paris.').usage(20, 6),
        ]);
        const app = await makeTestApp({
          config: {
            providers: {
              fake: { type: wire.type, base_url: wire.url(provider), api_key: 'test-key-000000' },
            },
            models: { large: 'fake/m1' },
          },
        });
        const model = await app.models.resolve();
        const tools = {
          get_weather: tool({
            inputSchema: z.object({ city: z.string() }),
            execute: async ({ city }) => ({ city, sky: 'sunny' }),
          }),
        };
        const options = { model: model.language_model, prompt: 'Weather?', tools, stopWhen: stepCountIs(3) };
        let text: string;
        if (streaming) {
          const result = streamText(options);
          text = '';
          for await (const delta of result.textStream) text += delta;
        } else {
          text = (await generateText(options)).text;
        }
        expect(text).toBe('It is sunny in Paris.');
        expect(provider.requests).toHaveLength(2);
        expect(
          provider.requests.every((r) => r.wire === (wire.type.startsWith('openai') ? 'openai' : wire.type)),
        ).toBe(true);
        expect(JSON.stringify(provider.requests[1].body)).toContain('sunny');
      });
    }
  }

  it('reports HTTP errors the way the SDK expects (429 with retry-after)', async () => {
    const provider = await fakeProvider([
      reply().httpError(429, { error: { message: 'slow down', type: 'rate_limit' } }, { 'retry-after': '1' }),
    ]);
    const app = await makeTestApp({
      config: { providers: { fake: { base_url: provider.url } }, models: { large: 'fake/m1' } },
    });
    const model = await app.models.resolve();
    await expect(
      generateText({ model: model.language_model, prompt: 'x', maxRetries: 0 }),
    ).rejects.toMatchObject({ statusCode: 429 });
  });
});
