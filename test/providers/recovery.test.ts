/**
 * Rate-limit recovery is invisible to callers: they resolve a model and stream; the wrapper
 * moves to the next `options.tpm_recovery.provider_model_fallback` selector on a 429 (waiting as
 * Retry-After says), publishes `provider_recovery.changed` when the provider changes, and turns
 * an exhausted chain into a `rate_limited` SvcError. 401s become `unauthorized` errors that name
 * the provider and the fix, with the key redacted.
 */
import { generateText, streamText } from 'ai';
import { describe, expect, it } from 'vitest';
import { type FakeProvider, fakeProvider, reply } from '../helpers/fake-provider';
import { isolatedEnv, makeTestApp } from '../helpers/make-test-app';
import { tmpWorkspace } from '../helpers/tmp-workspace';

const rateLimited = (retryAfter = '0') =>
  reply().httpError(
    429,
    { error: { message: 'Rate limit reached: tokens per min (TPM)', type: 'rate_limit' } },
    { 'retry-after': retryAfter },
  );

async function appWith(
  config: Record<string, unknown>,
  env: Record<string, string> = {},
  sleeps: number[] = [],
) {
  const workspace = tmpWorkspace();
  const app = await makeTestApp({ workspace, env: isolatedEnv(workspace, env), config });
  // Backoffs are recorded, not waited.
  app.providers.deps.sleep = async (ms: number) => {
    sleeps.push(ms);
  };
  return app;
}

async function text(stream: ReturnType<typeof streamText>) {
  let out = '';
  for await (const d of stream.textStream) out += d;
  return out;
}

describe('tpm recovery', () => {
  it('CFG-13: a rate-limited first selector is retried on a later selector of the same provider', async () => {
    const fake = await fakeProvider([rateLimited(), reply().text('served by m2')]);
    const sleeps: number[] = [];
    const app = await appWith(
      {
        providers: { acme: { type: 'openai-compat', base_url: fake.url, api_key: 'acme-key-0000000000' } },
        models: { large: 'acme/m1' },
        options: { tpm_recovery: { provider_model_fallback: ['acme/m1', 'acme/m2', 'acme/m3'] } },
      },
      {},
      sleeps,
    );
    const events: unknown[] = [];
    app.bus.subscribe('ses_1', (e) => events.push(e));
    const model = await app.models.resolve({ sessionId: 'ses_1' });
    expect(await text(streamText({ model: model.language_model, prompt: 'x', maxRetries: 0 }))).toBe(
      'served by m2',
    );
    expect(fake.requests.map((r) => r.body.model)).toEqual(['m1', 'm2']);
    // Same provider: no provider_recovery.changed.
    expect(events).toEqual([]);
    expect(app.memoryLog.records.some((r) => r.message === 'provider rate limited; falling back')).toBe(true);
  });

  it('publishes provider_recovery.changed when recovery crosses a provider boundary (Retry-After honored)', async () => {
    const first = await fakeProvider([rateLimited('2'), rateLimited('1')]);
    const second = await fakeProvider([reply().text('served by beta')]);
    const sleeps: number[] = [];
    const app = await appWith(
      {
        providers: {
          alpha: { type: 'openai-compat', base_url: first.url, api_key: 'alpha-key-000000000' },
          beta: { type: 'openai-compat', base_url: second.url, api_key: 'beta-key-0000000000' },
        },
        models: { large: 'alpha/fast' },
        options: { tpm_recovery: { provider_model_fallback: ['alpha/fast', 'alpha/slow', 'beta/big'] } },
      },
      {},
      sleeps,
    );
    const events: { type: string; payload: unknown }[] = [];
    app.bus.subscribe('ses_9', (e) => events.push({ type: e.type, payload: e.payload }));
    const model = await app.models.resolve({ sessionId: 'ses_9', runId: 'run_3' });
    // Callers see the primary model: recovery is transparent.
    expect(model.selector).toBe('alpha/fast');
    const result = await generateText({ model: model.language_model, prompt: 'x', maxRetries: 0 });
    expect(result.text).toBe('served by beta');
    expect(first.requests.map((r) => r.body.model)).toEqual(['fast', 'slow']);
    expect(second.requests.map((r) => r.body.model)).toEqual(['big']);
    expect(sleeps).toEqual([2000, 1000]);
    expect(events).toEqual([
      {
        type: 'provider_recovery.changed',
        payload: {
          session_id: 'ses_9',
          run_id: 'run_3',
          from: 'alpha/slow',
          to: 'beta/big',
          reason: 'rate_limited (HTTP 429)',
          attempt: 2,
        },
      },
    ]);
    // The next call in the same turn stays on the recovered selector.
    second.push(reply().text('still beta'));
    expect((await generateText({ model: model.language_model, prompt: 'y', maxRetries: 0 })).text).toBe(
      'still beta',
    );
  });

  it('gives a rate_limited SvcError naming the selectors once every fallback is exhausted', async () => {
    const fake: FakeProvider = await fakeProvider([
      rateLimited('3'),
      rateLimited('3'),
      reply().text('primary again'),
    ]);
    const sleeps: number[] = [];
    const app = await appWith(
      {
        providers: { acme: { type: 'openai-compat', base_url: fake.url, api_key: 'acme-key-0000000000' } },
        models: { large: 'acme/m1' },
        options: { tpm_recovery: { provider_model_fallback: ['acme/m2', 'acme/m3'], max_retries: 1 } },
      },
      {},
      sleeps,
    );
    const model = await app.models.resolve();
    const error = await generateText({ model: model.language_model, prompt: 'x', maxRetries: 0 }).catch(
      (e) => e,
    );
    expect(error).toMatchObject({ code: 'rate_limited', retryAfterMs: 3000 });
    expect(error.message).toContain('acme: rate limited on acme/m2');
    expect(error.message).toContain('tried acme/m1, acme/m2');
    expect(fake.requests.map((r) => r.body.model)).toEqual(['m1', 'm2']);
    // The next call starts over from the primary selector.
    expect((await generateText({ model: model.language_model, prompt: 'y', maxRetries: 0 })).text).toBe(
      'primary again',
    );
    expect(fake.requests.at(-1)?.body.model).toBe('m1');
  });

  it('without fallbacks, the 429 passes through to the AI SDK retry, which honors Retry-After', async () => {
    const fake = await fakeProvider([rateLimited(), reply().text('second time')]);
    const app = await appWith({
      providers: { acme: { type: 'openai-compat', base_url: fake.url, api_key: 'acme-key-0000000000' } },
      models: { large: 'acme/m1' },
    });
    const model = await app.models.resolve();
    expect((await generateText({ model: model.language_model, prompt: 'x', maxRetries: 1 })).text).toBe(
      'second time',
    );
    fake.push(rateLimited());
    await expect(
      generateText({ model: model.language_model, prompt: 'x', maxRetries: 0 }),
    ).rejects.toMatchObject({
      statusCode: 429,
    });
  });
});

describe('provider errors', () => {
  it('a 401 becomes an unauthorized SvcError naming the provider, the env var and the fix; the key is never shown', async () => {
    const fake = await fakeProvider([
      reply().httpError(401, {
        error: { message: 'Incorrect API key provided', type: 'invalid_request_error' },
      }),
    ]);
    const key = 'sk-secretkey-should-not-leak-0001';
    const app = await appWith(
      { providers: { openai: { base_url: fake.url } }, models: { large: 'openai/gpt-5' } },
      { OPENAI_API_KEY: key },
    );
    const model = await app.models.resolve();
    const error = await generateText({ model: model.language_model, prompt: 'x', maxRetries: 0 }).catch(
      (e) => e,
    );
    expect(error).toMatchObject({ code: 'unauthorized' });
    expect(error.message).toContain('openai: the provider rejected the credential (HTTP 401');
    expect(error.message).toContain('env OPENAI_API_KEY');
    expect(error.message).toContain('svc auth token openai --token-stdin');
    expect(app.redactor.string(error.message)).not.toContain(key);
    expect(JSON.stringify(app.redactor.value({ error: error.message }))).not.toContain(key);
  });

  it('a missing credential is a clear error naming the env var, before any request', async () => {
    const app = await appWith({ models: { large: 'anthropic/claude-sonnet-4-5-20250929' } });
    await expect(app.models.resolve()).rejects.toMatchObject({
      code: 'unauthorized',
      message: expect.stringContaining('set ANTHROPIC_API_KEY'),
    });
  });
});
