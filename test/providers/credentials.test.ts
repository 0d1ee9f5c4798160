/**
 * Provider blocks and credentials: a `[providers.<id>]` block is listed and merged across
 * sources; `api_key` takes a literal, a `${ENV}` interpolation or `keychain:<provider>`; each
 * API-key provider reads one env var (`_TOKEN` for the model hub, `_API_KEY` for the rest); two
 * disagreeing sources make a provider ambiguous; the durable store is a 0600 file by default and
 * the keyring is an opt-in that falls back to it.
 */
import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { generateText } from 'ai';
import { describe, expect, it } from 'vitest';
import { globalConfigPath } from '../../src/config/load';
import { embeddedCatalog } from '../../src/providers/catalog';
import { createCredentialStore, credentialFilePath } from '../../src/providers/credential-store';
import { storeKey } from '../../src/providers/credentials';
import { createLocalClient } from '../../src/surfaces/tui/local-client';
import { invokeTool } from '../../src/tools/core/call-tool';
import { fakeProvider, reply } from '../helpers/fake-provider';
import { isolatedEnv, makeTestApp } from '../helpers/make-test-app';
import { tmpWorkspace } from '../helpers/tmp-workspace';
import { svc } from './helpers/cli';

async function status(app: Awaited<ReturnType<typeof makeTestApp>>, provider?: string): Promise<any> {
  return invokeTool(app, 'get_provider_status', provider ? { provider } : {}, { surface: 'agent' });
}

async function appWith(
  config: Record<string, unknown>,
  env: Record<string, string> = {},
  globalConfig?: Record<string, unknown>,
) {
  const workspace = tmpWorkspace();
  return makeTestApp({ workspace, config, globalConfig, env: isolatedEnv(workspace, env) });
}

describe('provider blocks', () => {
  it('CFG-01: a [providers.<id>] block is listed by show-provider-status', async () => {
    const app = await appWith({
      providers: {
        lab: { type: 'openai-compat', base_url: 'http://10.0.0.5:9000/v1', api_key: 'lab-key-00000000' },
      },
    });
    const result = await svc(app, ['config', 'show-provider-status', '--json']);
    expect(result.code, result.stderr).toBe(0);
    expect(result.json.providers.find((p: any) => p.id === 'lab')).toMatchObject({
      configured: true,
      ready: true,
      type: 'openai-compat',
      base_url: 'http://10.0.0.5:9000/v1',
    });
  });

  it('CFG-02: fields from the global and the workspace file both take effect, with provenance', async () => {
    const fake = await fakeProvider([reply().text('merged')]);
    const app = await appWith(
      { providers: { lab: { base_url: fake.url } }, models: { large: 'lab/m' } },
      {},
      { providers: { lab: { type: 'openai-compat', api_key: 'global-key-000000000' } } },
    );
    const model = await app.models.resolve();
    expect((await generateText({ model: model.language_model, prompt: 'x' })).text).toBe('merged');
    expect(fake.requests[0].headers.authorization).toBe('Bearer global-key-000000000');
    const explain = await svc(app, ['config', 'explain', 'providers.lab', '--json']);
    const fields = explain.json.fields as { key: string; source_kind: string }[];
    expect(fields.find((f) => f.key === 'providers.lab.base_url')?.source_kind).toBe('workspace');
    expect(fields.find((f) => f.key === 'providers.lab.api_key')?.source_kind).toBe('global');
  });

  it('CFG-04: a literal api_key is what the provider receives', async () => {
    const fake = await fakeProvider([reply().text('ok')]);
    const app = await appWith({
      providers: { openai: { base_url: fake.url, api_key: 'literal-key-1234567890' } },
      models: { large: 'openai/gpt-5' },
    });
    await generateText({ model: (await app.models.resolve()).language_model, prompt: 'x' });
    expect(fake.requests[0].headers.authorization).toBe('Bearer literal-key-1234567890');
    expect((await status(app, 'openai')).providers[0].credential_source_kind).toBe('config_literal');
  });

  it('CFG-05: ${ENV} interpolation is resolved from the environment', async () => {
    const fake = await fakeProvider([reply().text('ok')]);
    const app = await appWith(
      {
        providers: { openai: { base_url: fake.url, api_key: '${MY_OPENAI}' } },
        models: { large: 'openai/gpt-5' },
      },
      { MY_OPENAI: 'from-env-key-1234567890' },
    );
    await generateText({ model: (await app.models.resolve()).language_model, prompt: 'x' });
    expect(fake.requests[0].headers.authorization).toBe('Bearer from-env-key-1234567890');
    const row = (await status(app, 'openai')).providers[0];
    expect(row).toMatchObject({ credential_source_kind: 'config_env' });
    expect(row.credential_source).toContain('${MY_OPENAI}');
  });

  it('CFG-06: keychain:<provider> reads the durable store (svc auth token writes both)', async () => {
    const fake = await fakeProvider([reply().text('ok')]);
    const app = await appWith({
      providers: { mistral: { base_url: fake.url } },
      models: { large: 'mistral/devstral-small-latest' },
    });
    const stored = await svc(app, ['auth', 'token', 'mistral', '--token-stdin', '--json'], {
      stdin: 'stored-mistral-key-0001\n',
    });
    expect(stored.code, stored.stderr).toBe(0);
    expect(stored.json).toMatchObject({
      provider: 'mistral',
      stored: true,
      backend: 'file',
      sentinel_written: true,
    });
    expect(stored.stdout).not.toContain('stored-mistral-key-0001');
    app.reloadConfig();
    expect(app.config.providers.mistral.api_key).toBe('keychain:mistral');
    await generateText({ model: (await app.models.resolve()).language_model, prompt: 'x' });
    expect(fake.requests[0].headers.authorization).toBe('Bearer stored-mistral-key-0001');
    expect((await status(app, 'mistral')).providers[0].credential_source_kind).toBe('keychain');
  });

  it('an empty keychain sentinel says how to store the key', async () => {
    const app = await appWith({
      providers: { groq: { api_key: 'keychain:groq' } },
      models: { large: 'groq/openai/gpt-oss-20b' },
    });
    await expect(app.models.resolve()).rejects.toMatchObject({
      message: expect.stringContaining('svc auth token groq --token-stdin'),
    });
  });
});

describe('env credentials', () => {
  it('AUTH-01 / AUTH-12: setting the provider env var makes it ready', async () => {
    const app = await appWith({}, { GROQ_API_KEY: 'gsk_0000000000000000' });
    const row = (await status(app, 'groq')).providers[0];
    expect(row).toMatchObject({ ready: true, configured: false, credential_source: 'env GROQ_API_KEY' });
  });

  it('AUTH-02: config alone makes it ready', async () => {
    const app = await appWith({ providers: { deepseek: { api_key: 'deepseek-config-key-00' } } });
    expect((await status(app, 'deepseek')).providers[0]).toMatchObject({ ready: true, configured: true });
  });

  it('AUTH-13 / AUTH-14: the model hub reads a *_TOKEN variable; every other API-key provider *_API_KEY', () => {
    const apiKeyProviders = embeddedCatalog().providers.filter(
      (p) => p.auth === 'api_key' || (p.auth === 'oauth' && p.api_key_env.length),
    );
    const hub = apiKeyProviders.filter((p) => p.api_key_env[0]?.endsWith('_TOKEN'));
    expect(hub.map((p) => p.id)).toEqual(['huggingface']);
    expect(hub[0].api_key_env[0]).toBe('HF_TOKEN');
    for (const p of apiKeyProviders.filter((p) => p.id !== 'huggingface')) {
      expect(p.api_key_env.length, p.id).toBeGreaterThan(0);
      for (const name of p.api_key_env) expect(name, p.id).toMatch(/_API_KEY$/);
    }
  });

  it('AUTH-13: huggingface is ready from HF_TOKEN', async () => {
    const app = await appWith({}, { HF_TOKEN: 'hf_0000000000000000000000' });
    expect((await status(app, 'huggingface')).providers[0]).toMatchObject({
      ready: true,
      credential_source: 'env HF_TOKEN',
    });
  });

  it('AUTH-16: a loopback base_url with no key is ready', async () => {
    const app = await appWith({
      providers: {
        ollama: { base_url: 'http://127.0.0.1:11434/v1' },
        mine: { base_url: 'http://localhost:8081/v1' },
      },
    });
    const rows = (await status(app)).providers;
    expect(rows.find((p: any) => p.id === 'ollama')).toMatchObject({
      ready: true,
      credential_source_kind: 'local',
    });
    expect(rows.find((p: any) => p.id === 'mine')).toMatchObject({
      ready: true,
      credential_source_kind: 'local',
    });
  });

  it('AUTH-17: a custom openai-compat provider resolves ${ITS_OWN_VAR}', async () => {
    const app = await appWith(
      {
        providers: {
          corp: {
            type: 'openai-compat',
            base_url: 'https://llm.corp.example/v1',
            api_key: '${CORP_LLM_API_KEY}',
          },
        },
      },
      { CORP_LLM_API_KEY: 'corp-secret-0000000000' },
    );
    const row = (await status(app, 'corp')).providers[0];
    expect(row).toMatchObject({ ready: true, credential_source_kind: 'config_env' });
    expect(row.credential_source).toContain('${CORP_LLM_API_KEY}');
  });

  it('ambiguous: config and env hold different keys (config wins, status says so)', async () => {
    const app = await appWith(
      { providers: { openai: { api_key: 'config-key-aaaaaaaaaa' } } },
      { OPENAI_API_KEY: 'env-key-bbbbbbbbbbbb' },
    );
    const row = (await status(app, 'openai')).providers[0];
    expect(row).toMatchObject({ ready: true, ambiguous: true, credential_source_kind: 'config_literal' });
    expect(row.ambiguity).toContain('env OPENAI_API_KEY');
    expect(JSON.stringify(row)).not.toMatch(/aaaaaaaaaa|bbbbbbbbbb/);
  });

  it('not ambiguous when ${ENV} and the env var are the same key', async () => {
    const app = await appWith(
      { providers: { openai: { api_key: '${OPENAI_API_KEY}' } } },
      { OPENAI_API_KEY: 'same-key-cccccccccc' },
    );
    expect((await status(app, 'openai')).providers[0].ambiguous).toBe(false);
  });
});

describe('durable credential store', () => {
  it('is a file under the user config dir created with mode 0600; status names the backend', async () => {
    const app = await appWith({});
    app.providers.store.set('openai', {
      kind: 'api_key',
      value: 'stored-0000000000',
      stored_by: 'test',
      stored_at: 'now',
    });
    const path = credentialFilePath(app.env);
    expect(path).toBe(`${app.env.XDG_CONFIG_HOME}/svc/credentials.json`);
    expect(statSync(path).mode & 0o777).toBe(0o600);
    const s = await status(app);
    expect(s.credential_store).toMatchObject({
      backend: 'file',
      requested: 'file',
      path,
      exists: true,
      mode: '0600',
    });
    expect(s.providers.find((p: any) => p.id === 'openai')).toMatchObject({
      ready: true,
      credential_source_kind: 'credential_store',
    });
  });

  it('the keyring is opt-in and falls back to the file when it cannot be used', async () => {
    const workspace = tmpWorkspace();
    const env = isolatedEnv(workspace);
    const store = createCredentialStore({ env, backend: 'keyring' });
    store.set('xai', { kind: 'api_key', value: 'keyring-or-file-0000', stored_by: 'test', stored_at: 'now' });
    expect(store.get('xai')?.value).toBe('keyring-or-file-0000');
    const s = store.status();
    expect(s.requested).toBe('keyring');
    if (s.backend === 'file') {
      // Headless machines (this sandbox): the keyring refuses and the 0600 file is used instead.
      expect(s.keyring_error).toBeTruthy();
      expect(statSync(credentialFilePath(env)).mode & 0o777).toBe(0o600);
    } else {
      expect(s.backend).toBe('keyring');
      store.delete('xai');
    }
  });
});

describe('storeKey: one way to store an API key', () => {
  it('the CLI and the TUI store a key the same way: the durable store and the keychain sentinel', async () => {
    const cliApp = await appWith({ providers: { mistral: { base_url: 'http://127.0.0.1:9/v1' } } });
    const cli = await svc(cliApp, ['auth', 'token', 'mistral', '--token-stdin', '--json'], {
      stdin: 'cli-mistral-key-0001\n',
    });
    expect(cli.code, cli.stderr).toBe(0);

    const tuiApp = await appWith({ providers: { mistral: { base_url: 'http://127.0.0.1:9/v1' } } });
    await createLocalClient(tuiApp).storeApiKey('mistral', '  tui-mistral-key-0002  ');

    for (const [app, key, by] of [
      [cliApp, 'cli-mistral-key-0001', 'svc auth token'],
      [tuiApp, 'tui-mistral-key-0002', 'svc tui'],
    ] as const) {
      app.reloadConfig();
      expect(app.providers.store.get('mistral')).toMatchObject({
        kind: 'api_key',
        value: key,
        stored_by: by,
      });
      expect(app.config.providers.mistral.api_key).toBe('keychain:mistral');
      // AUTH-28: the sentinel goes to the user config, never the workspace svc.toml (meant to be committed).
      expect(readFileSync(globalConfigPath(app.env), 'utf8')).toContain('api_key = "keychain:mistral"');
      expect(readFileSync(join(app.workspace, 'svc.toml'), 'utf8')).not.toContain('keychain');
      expect((await status(app, 'mistral')).providers[0].credential_source_kind).toBe('keychain');
    }
  });

  it('AUTH-28: svc auth token writes the user config, leaves the workspace svc.toml byte for byte; logout removes both the key and the sentinel', async () => {
    const app = await appWith({ providers: { mistral: { base_url: 'http://127.0.0.1:9/v1' } } });
    const workspaceFile = join(app.workspace, 'svc.toml');
    const before = readFileSync(workspaceFile, 'utf8');
    const stored = await svc(app, ['auth', 'token', 'mistral', '--token-stdin'], {
      stdin: 'key-mistral-0003\n',
    });
    expect(stored.code, stored.stderr).toBe(0);
    expect(stored.stdout).toContain(
      `${globalConfigPath(app.env)}: providers.mistral.api_key = "keychain:mistral"`,
    );
    expect(readFileSync(workspaceFile, 'utf8')).toBe(before);
    app.reloadConfig();
    expect((await status(app, 'mistral')).providers[0]).toMatchObject({ credential_source_kind: 'keychain' });

    const out = await svc(app, ['auth', 'logout', 'mistral', '--json']);
    expect(out.code, out.stderr).toBe(0);
    expect(out.json).toEqual({
      provider: 'mistral',
      removed: true,
      sentinel_removed_from: [globalConfigPath(app.env)],
    });
    expect(readFileSync(globalConfigPath(app.env), 'utf8')).not.toContain('keychain');
    expect(readFileSync(workspaceFile, 'utf8')).toBe(before);
    app.reloadConfig();
    expect(app.providers.store.get('mistral')).toBeUndefined();
    expect(app.config.providers.mistral.api_key).toBeUndefined();
  });

  it('logout also removes a sentinel an older version wrote to the workspace svc.toml, and nothing else', async () => {
    const app = await appWith({
      providers: {
        mistral: { base_url: 'http://127.0.0.1:9/v1', api_key: 'keychain:mistral' },
        groq: { api_key: 'literal-groq-key-1234' },
      },
    });
    const out = await svc(app, ['auth', 'logout', 'mistral']);
    expect(out.code, out.stderr).toBe(0);
    expect(out.stdout).toContain('mistral: nothing was stored');
    expect(out.stdout).toContain(
      `${join(app.workspace, 'svc.toml')}: providers.mistral.api_key = "keychain:mistral" removed`,
    );
    const text = readFileSync(join(app.workspace, 'svc.toml'), 'utf8');
    expect(text).not.toContain('keychain:mistral');
    expect(text).toContain('literal-groq-key-1234');
    expect((await svc(app, ['auth', 'logout', 'groq'])).stdout).toBe('groq: nothing was stored\n');
    expect(readFileSync(join(app.workspace, 'svc.toml'), 'utf8')).toContain('literal-groq-key-1234');
  });

  it('a key the workspace svc.toml overrides is stored, with a warning naming the line to remove', async () => {
    const app = await appWith({
      providers: { mistral: { base_url: 'http://127.0.0.1:9/v1', api_key: 'literal-mistral-key-9876' } },
    });
    const stored = await svc(app, ['auth', 'token', 'mistral', '--token-stdin'], {
      stdin: 'key-mistral-0004\n',
    });
    expect(stored.code, stored.stderr).toBe(0);
    expect(stored.stdout).toContain(
      `warning: ${join(app.workspace, 'svc.toml')} sets providers.mistral.api_key, which wins over the user config; remove that line to use the stored key`,
    );
  });

  it('checks the provider before the key: an id, known, and one that takes a key', async () => {
    const app = await appWith({});
    expect(() => storeKey(app, { provider: 'Bad Id', key: 'k', kind: 'api_key', by: 'test' })).toThrow(
      /is not a provider id/,
    );
    expect(() => storeKey(app, { provider: 'nope', key: 'k', kind: 'api_key', by: 'test' })).toThrow(
      /unknown provider "nope"/,
    );
    expect(() => storeKey(app, { provider: 'claude-code', key: 'k', kind: 'api_key', by: 'test' })).toThrow(
      /takes no API key/,
    );
    expect(() => storeKey(app, { provider: 'groq', key: '   ', kind: 'api_key', by: 'test' })).toThrow(
      /key: empty/,
    );
    expect(app.providers.store.list()).toEqual([]);
  });
});
