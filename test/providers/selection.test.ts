/**
 * Model selection: which selector the next turn uses and why (session override → agent config →
 * [models] default → first ready provider's recommended model → a local server probed on
 * loopback), bare model ids, and the errors for unknown providers and models. Pins AUTH-53: the
 * model-selection readout names the model the next resolve actually uses.
 */
import { generateText } from 'ai';
import { describe, expect, it } from 'vitest';
import { invokeTool } from '../../src/tools/core/call-tool';
import { fakeProvider, reply } from '../helpers/fake-provider';
import { isolatedEnv, makeTestApp } from '../helpers/make-test-app';
import { tmpWorkspace } from '../helpers/tmp-workspace';
import { svc } from './helpers/cli';

async function appWith(config: Record<string, unknown>, env: Record<string, string> = {}) {
  const workspace = tmpWorkspace();
  return makeTestApp({ workspace, config, env: isolatedEnv(workspace, env) });
}

async function selection(
  app: Awaited<ReturnType<typeof makeTestApp>>,
  input: Record<string, unknown> = {},
): Promise<any> {
  return invokeTool(app, 'get_model_selection', input, { surface: 'agent' });
}

const noProbe = { options: { local_probe: { enabled: false } } };

describe('model selection', () => {
  it('AUTH-53: the default comes from [models] large and matches the model used next', async () => {
    const fake = await fakeProvider([reply().text('ok')]);
    const app = await appWith({
      providers: { acme: { base_url: fake.url } },
      models: { large: 'acme/big', small: 'acme/tiny' },
    });
    const large = await selection(app);
    expect(large).toMatchObject({
      selector: 'acme/big',
      source: 'default',
      provider: 'acme',
      model_id: 'big',
      ready: true,
    });
    const resolved = await app.models.resolve();
    expect(resolved).toMatchObject({ selector: large.selector, source: 'default' });
    await generateText({ model: resolved.language_model, prompt: 'x' });
    expect(fake.requests[0].body.model).toBe('big');
    expect(await selection(app, { purpose: 'small' })).toMatchObject({
      selector: 'acme/tiny',
      source: 'default',
    });
    expect((await app.models.resolve({ purpose: 'small' })).selector).toBe('acme/tiny');
  });

  it('a session override and an agent model win over the default, in that order', async () => {
    const app = await appWith({
      providers: { acme: { base_url: 'http://127.0.0.1:9/v1' } },
      models: { large: 'acme/default' },
      agents: { reviewer: { model: 'acme/review' } },
    });
    expect(await selection(app, { agent: 'reviewer' })).toMatchObject({
      selector: 'acme/review',
      source: 'agent',
    });
    const session = await app.sessions.create({ title: 't', agent: 'reviewer', model: 'acme/pinned' });
    const s = await selection(app, { session_id: session.id });
    expect(s).toMatchObject({ selector: 'acme/pinned', source: 'session', agent: 'reviewer' });
    expect(s.candidates.slice(0, 4).map((c: any) => [c.source, c.selector, c.applies])).toEqual([
      ['explicit', null, false],
      ['session', 'acme/pinned', true],
      ['agent', 'acme/review', false],
      ['default', 'acme/default', false],
    ]);
    expect(
      (await app.models.resolve({ sessionModel: session.model, agentModel: 'acme/review' })).source,
    ).toBe('session');
    await expect(selection(app, { session_id: 'ses_missing' })).rejects.toMatchObject({ code: 'not_found' });
  });

  it('with no default, picks the first ready provider and its recommended model, and says so', async () => {
    const app = await appWith(noProbe, { GEMINI_API_KEY: 'gemini-key-000000000000' });
    const s = await selection(app);
    expect(s).toMatchObject({ selector: 'google/gemini-2.5-pro', source: 'first_ready', ready: true });
    expect(s.reason).toContain('first ready provider (google)');
    expect(await selection(app, { purpose: 'small' })).toMatchObject({
      selector: 'google/gemini-2.5-flash',
      source: 'first_ready',
    });
    expect((await app.models.resolve()).selector).toBe('google/gemini-2.5-pro');
  });

  it('a bare model id resolves when exactly one configured provider offers it; two is ambiguous', async () => {
    const app = await appWith({ ...noProbe }, { XAI_API_KEY: 'xai-key-00000000000000' });
    expect((await app.models.resolve({ selector: 'grok-code-fast-1' })).selector).toBe(
      'xai/grok-code-fast-1',
    );
    const both = await appWith(
      { ...noProbe },
      { XAI_API_KEY: 'xai-key-00000000000000', OPENROUTER_API_KEY: 'or-key-0000000000000' },
    );
    await expect(both.models.resolve({ selector: 'gpt-5' })).rejects.toMatchObject({ code: 'not_found' });
    const ambiguous = await appWith(
      { ...noProbe },
      {
        OPENAI_API_KEY: 'oa-key-00000000000000',
        AZURE_OPENAI_API_KEY: 'az-key-0000000000000',
        AZURE_OPENAI_ENDPOINT: 'https://x.openai.azure.com',
      },
    );
    await expect(ambiguous.models.resolve({ selector: 'gpt-5' })).rejects.toMatchObject({
      code: 'invalid_input',
      message: expect.stringContaining('openai/gpt-5'),
    });
  });

  it('models with slashes: openrouter/anthropic/claude-sonnet-4.5 keeps the whole model id', async () => {
    const app = await appWith(noProbe, { OPENROUTER_API_KEY: 'or-key-00000000000000' });
    const r = await app.models.resolve({ selector: 'openrouter/anthropic/claude-sonnet-4.5' });
    expect(r).toMatchObject({ provider: 'openrouter', model_id: 'anthropic/claude-sonnet-4.5' });
    expect(r.info).toMatchObject({ context_window: 1000000, tool_call: true });
  });

  it('unknown provider and unknown model are clear errors that say what to do', async () => {
    const app = await appWith(noProbe, { OPENAI_API_KEY: 'oa-key-00000000000000' });
    await expect(app.models.resolve({ selector: 'nosuch/model' })).rejects.toMatchObject({
      code: 'not_found',
      message: expect.stringContaining('unknown provider "nosuch"'),
    });
    await expect(app.models.resolve({ selector: 'openai/gpt-99' })).rejects.toMatchObject({
      code: 'not_found',
      message: expect.stringMatching(/openai has no model "gpt-99".*\[\[providers\.openai\.models\]\]/),
    });
    const bad = await appWith({ providers: { odd: { type: 'quantum' } }, models: { large: 'odd/x' } });
    await expect(bad.models.resolve()).rejects.toMatchObject({
      code: 'config_error',
      message: expect.stringContaining('providers.odd.type: unknown type "quantum"'),
    });
  });
});

describe('nothing configured', () => {
  it('probes loopback for a local model server and uses it', async () => {
    const fake = await fakeProvider([reply().text('local hello')]);
    const app = await appWith({
      options: {
        local_probe: { urls: ['ollama=http://127.0.0.1:1/v1', `lmstudio=${fake.url}`], timeout_ms: 500 },
      },
    });
    const model = await app.models.resolve();
    expect(model).toMatchObject({ selector: 'lmstudio/fake-model', source: 'local_server' });
    expect((await generateText({ model: model.language_model, prompt: 'x' })).text).toBe('local hello');
  });

  it('without any server, the error says exactly how to add a provider (what svc run prints)', async () => {
    const app = await appWith({
      options: { local_probe: { urls: ['ollama=http://127.0.0.1:1/v1'], timeout_ms: 200 } },
    });
    const error = await app.models.resolve().catch((e) => e);
    expect(error.code).toBe('config_error');
    expect(error.message).toContain('export ANTHROPIC_API_KEY');
    expect(error.message).toContain('[providers.ollama] base_url = "http://127.0.0.1:11434/v1"');
    expect(error.message).toContain('svc auth copilot');
    const cli = await svc(app, ['config', 'show-model-selection']);
    expect(cli.code).toBe(0);
    expect(cli.stdout).toContain('source: none');
  });
});
