/**
 * A turn streams through every provider's real AI SDK package against a fake server on
 * 127.0.0.1 (GEN-06: 15+ providers end to end). Pins, per provider: the request reaches the
 * configured base_url (CFG-03) on that provider's wire, carries the credential the way the
 * provider expects, and the streamed text arrives intact.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { streamText } from 'ai';
import { describe, expect, it } from 'vitest';
import { sessionCachePath } from '../../src/providers/oauth/chatgpt';
import { fakeProvider, reply } from '../helpers/fake-provider';
import { isolatedEnv, makeTestApp } from '../helpers/make-test-app';
import { tmpWorkspace } from '../helpers/tmp-workspace';
import { fakeBedrock, fakeResponses } from './helpers/fake-wires';

const KEY = 'test-key-wire-0000000000';

async function streamOnce(app: Awaited<ReturnType<typeof makeTestApp>>): Promise<string> {
  const model = await app.models.resolve();
  const result = streamText({ model: model.language_model, prompt: 'Say hello.' });
  let text = '';
  for await (const delta of result.textStream) text += delta;
  return text;
}

async function appFor(config: Record<string, unknown>, env: Record<string, string> = {}) {
  const workspace = tmpWorkspace();
  return makeTestApp({ workspace, config, env: isolatedEnv(workspace, env) });
}

type OpenAiLike = {
  id: string;
  model: string;
  header: [string, RegExp];
};

const openaiWire: OpenAiLike[] = [
  { id: 'openai', model: 'gpt-5', header: ['authorization', /^Bearer test-key-wire/] },
  {
    id: 'openrouter',
    model: 'anthropic/claude-sonnet-4.5',
    header: ['authorization', /^Bearer test-key-wire/],
  },
  { id: 'groq', model: 'openai/gpt-oss-120b', header: ['authorization', /^Bearer test-key-wire/] },
  { id: 'mistral', model: 'devstral-medium-latest', header: ['authorization', /^Bearer test-key-wire/] },
  { id: 'xai', model: 'grok-code-fast-1', header: ['authorization', /^Bearer test-key-wire/] },
  { id: 'deepseek', model: 'deepseek-chat', header: ['authorization', /^Bearer test-key-wire/] },
  { id: 'cerebras', model: 'qwen-3-coder-480b', header: ['authorization', /^Bearer test-key-wire/] },
  { id: 'togetherai', model: 'openai/gpt-oss-120b', header: ['authorization', /^Bearer test-key-wire/] },
  {
    id: 'fireworks',
    model: 'accounts/fireworks/models/gpt-oss-120b',
    header: ['authorization', /^Bearer test-key-wire/],
  },
  { id: 'deepinfra', model: 'openai/gpt-oss-120b', header: ['authorization', /^Bearer test-key-wire/] },
];

describe('GEN-06: a turn streams through each provider package', () => {
  for (const p of openaiWire) {
    it(`${p.id}: OpenAI-style chat wire, CFG-03 base_url, key in ${p.header[0]}`, async () => {
      const fake = await fakeProvider([reply().text(`hello from ${p.id}`)]);
      const app = await appFor({
        providers: { [p.id]: { base_url: fake.url, api_key: KEY } },
        models: { large: `${p.id}/${p.model}` },
      });
      expect(await streamOnce(app)).toBe(`hello from ${p.id}`);
      expect(fake.requests).toHaveLength(1);
      expect(fake.requests[0]).toMatchObject({ wire: 'openai', stream: true });
      expect(fake.requests[0].body.model).toBe(p.model);
      expect(String(fake.requests[0].headers[p.header[0]])).toMatch(p.header[1]);
    });
  }

  it('anthropic: messages wire with x-api-key', async () => {
    const fake = await fakeProvider([reply().text('hello from anthropic')]);
    const app = await appFor({
      providers: { anthropic: { base_url: fake.anthropicUrl, api_key: KEY } },
      models: { large: 'anthropic/claude-sonnet-4-5-20250929' },
    });
    expect(await streamOnce(app)).toBe('hello from anthropic');
    expect(fake.requests[0]).toMatchObject({ wire: 'anthropic', stream: true });
    expect(fake.requests[0].headers['x-api-key']).toBe(KEY);
  });

  it('google: generateContent wire with x-goog-api-key', async () => {
    const fake = await fakeProvider([reply().text('hello from gemini')]);
    const app = await appFor({
      providers: { google: { base_url: fake.googleUrl, api_key: KEY } },
      models: { large: 'google/gemini-2.5-flash' },
    });
    expect(await streamOnce(app)).toBe('hello from gemini');
    expect(fake.requests[0]).toMatchObject({ wire: 'google', stream: true });
    expect(fake.requests[0].path).toContain('/models/gemini-2.5-flash:streamGenerateContent');
    expect(fake.requests[0].headers['x-goog-api-key']).toBe(KEY);
  });

  it('google-vertex: project and location from env, express-mode key, generateContent wire', async () => {
    const fake = await fakeProvider([reply().text('hello from vertex')]);
    const app = await appFor(
      {
        providers: { 'google-vertex': { base_url: fake.googleUrl, api_key: KEY } },
        models: { large: 'google-vertex/gemini-2.5-pro' },
      },
      { GOOGLE_VERTEX_PROJECT: 'proj-1', GOOGLE_VERTEX_LOCATION: 'us-central1' },
    );
    expect(await streamOnce(app)).toBe('hello from vertex');
    expect(fake.requests[0].path).toContain('/models/gemini-2.5-pro:streamGenerateContent');
    expect(fake.requests[0].headers['x-goog-api-key']).toBe(KEY);
  });

  it('amazon-bedrock: Converse event stream, SigV4-signed with env keys and the region', async () => {
    const fake = await fakeBedrock([{ text: 'hello from bedrock' }]);
    const app = await appFor(
      {
        providers: { 'amazon-bedrock': { base_url: fake.url } },
        models: { large: 'amazon-bedrock/amazon.nova-pro-v1:0' },
      },
      {
        AWS_ACCESS_KEY_ID: 'AKIDEXAMPLE000000000',
        AWS_SECRET_ACCESS_KEY: 'wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY',
        AWS_REGION: 'eu-west-1',
      },
    );
    expect(await streamOnce(app)).toBe('hello from bedrock');
    expect(fake.requests[0].path).toBe(
      `/model/${encodeURIComponent('amazon.nova-pro-v1:0')}/converse-stream`,
    );
    const auth = String(fake.requests[0].headers.authorization);
    expect(auth).toMatch(
      /^AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE000000000\/\d{8}\/eu-west-1\/bedrock\/aws4_request/,
    );
  });

  it('azure: deployment URL with the dated api-version and the api-key header', async () => {
    const fake = await fakeProvider([reply().text('hello from azure')]);
    const app = await appFor({
      providers: {
        azure: {
          base_url: `${fake.origin}/openai`,
          api_key: KEY,
          provider_options: { api_version: '2025-04-01-preview' },
        },
      },
      models: { large: 'azure/gpt-4.1' },
    });
    expect(await streamOnce(app)).toBe('hello from azure');
    expect(fake.requests[0].path).toBe(
      '/openai/deployments/gpt-4.1/chat/completions?api-version=2025-04-01-preview',
    );
    expect(fake.requests[0].headers['api-key']).toBe(KEY);
  });

  it('huggingface: Responses wire with the HF token (AUTH-13: HF_TOKEN)', async () => {
    const fake = await fakeResponses([{ text: 'hello from hugging face' }]);
    const app = await appFor(
      {
        providers: { huggingface: { base_url: fake.url } },
        models: { large: 'huggingface/openai/gpt-oss-120b' },
      },
      { HF_TOKEN: 'hf_faketoken0000000000000000' },
    );
    expect(await streamOnce(app)).toBe('hello from hugging face');
    expect(fake.requests[0].path).toBe('/responses');
    expect(fake.requests[0].body.model).toBe('openai/gpt-oss-120b');
    expect(fake.requests[0].headers.authorization).toBe('Bearer hf_faketoken0000000000000000');
  });

  it('ollama (AUTH-16): a loopback base_url needs no key and sends none', async () => {
    const fake = await fakeProvider([reply().text('hello from ollama')]);
    const app = await appFor({
      providers: { ollama: { base_url: fake.url } },
      models: { large: 'ollama/qwen3-coder:30b' },
    });
    expect(await streamOnce(app)).toBe('hello from ollama');
    expect(fake.requests[0].headers.authorization).toBeUndefined();
  });

  it('CFG-07: custom providers by type speak their wire (openai-compat and anthropic-style)', async () => {
    const fake = await fakeProvider([reply().text('compat'), reply().text('anthropic style')]);
    const app = await appFor(
      {
        providers: {
          mine: { type: 'openai-compat', base_url: fake.url, api_key: '${MINE_API_KEY}' },
          claudeish: { type: 'anthropic-style', base_url: fake.anthropicUrl, api_key: KEY },
        },
        models: { large: 'mine/any-model' },
      },
      { MINE_API_KEY: 'mine-secret-value-123456' },
    );
    expect(await streamOnce(app)).toBe('compat');
    const second = await app.models.resolve({ selector: 'claudeish/some-model' });
    let text = '';
    for await (const d of streamText({ model: second.language_model, prompt: 'x' }).textStream) text += d;
    expect(text).toBe('anthropic style');
    expect(fake.requests.map((r) => r.wire)).toEqual(['openai', 'anthropic']);
    // AUTH-17: the custom provider's ${MY_VAR} interpolation is what the server receives.
    expect(fake.requests[0].headers.authorization).toBe('Bearer mine-secret-value-123456');
  });

  it('copilot: the stored Copilot token and integration headers on the chat wire', async () => {
    const fake = await fakeProvider([reply().text('hello from copilot')]);
    const app = await appFor({
      providers: { copilot: { base_url: fake.url } },
      models: { large: 'copilot/gpt-4.1' },
    });
    app.providers.store.set('copilot', {
      kind: 'oauth',
      refresh: 'gho_githubtoken00000000000000',
      access: 'copilot-access-token-000000',
      expires_at: app.clock.now() + 3_600_000,
      stored_by: 'test',
      stored_at: 'now',
    });
    expect(await streamOnce(app)).toBe('hello from copilot');
    expect(fake.requests[0].headers.authorization).toBe('Bearer copilot-access-token-000000');
    expect(fake.requests[0].headers['copilot-integration-id']).toBe('vscode-chat');
  });

  it('hyper: HYPER_API_KEY on the chat wire', async () => {
    const fake = await fakeProvider([reply().text('hello from hyper')]);
    const app = await appFor(
      { providers: { hyper: { base_url: fake.url } }, models: { large: 'hyper/glm-4.6' } },
      { HYPER_API_KEY: 'hyper-key-000000000000' },
    );
    expect(await streamOnce(app)).toBe('hello from hyper');
    expect(fake.requests[0].headers.authorization).toBe('Bearer hyper-key-000000000000');
  });

  it('chatgpt: the session (not an API key) and account id on the Responses wire', async () => {
    const fake = await fakeResponses([{ text: 'hello from chatgpt' }]);
    const app = await appFor({
      providers: { chatgpt: { base_url: fake.url } },
      models: { large: 'chatgpt/gpt-5-codex' },
    });
    const path = sessionCachePath(app.dataDir);
    mkdirSync(dirname(path), { recursive: true });
    writeFileSync(
      path,
      JSON.stringify({
        access_token: 'chatgpt-access-000000000000',
        refresh_token: 'chatgpt-refresh-00000000000',
        account_id: 'acct-42',
        expires_at: app.clock.now() + 3_600_000,
        origin: 'browser',
        last_refresh: 'now',
      }),
    );
    expect(await streamOnce(app)).toBe('hello from chatgpt');
    expect(fake.requests[0].path).toBe('/responses');
    expect(fake.requests[0].headers.authorization).toBe('Bearer chatgpt-access-000000000000');
    expect(fake.requests[0].headers['chatgpt-account-id']).toBe('acct-42');
  });
});
