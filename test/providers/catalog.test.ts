/**
 * The raw catalog: embedded JSON plus refreshed metadata cached by an explicit
 * `svc update-providers`. Pins: ≥ 15 providers listed; `svc models`, `GET /v1/models` and
 * `list_models` are one definition in the OpenAI list shape; a refresh from a file or URL is
 * validated before it replaces the cache and a bad source leaves it as it was;
 * `disable_provider_auto_update` ignores the cache; a refresh touches no config or credential.
 */
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { catalogCachePath, embeddedCatalog, parseCatalog } from '../../src/providers/catalog';
import embeddedJson from '../../src/providers/catalog.json';
import { credentialFilePath } from '../../src/providers/credential-store';
import { invokeTool } from '../../src/tools/core/call-tool';
import { isolatedEnv, makeTestApp } from '../helpers/make-test-app';
import { viaHttp } from '../helpers/surfaces';
import { tmpWorkspace } from '../helpers/tmp-workspace';
import { svc } from './helpers/cli';

function refreshed(overrides: { version?: string; extraProvider?: boolean } = {}) {
  const base = embeddedCatalog();
  const openai = base.providers.find((p) => p.id === 'openai')!;
  return {
    schema_version: 1,
    version: overrides.version ?? '2099.01.01',
    providers: [
      {
        ...openai,
        models: [
          ...openai.models,
          {
            id: 'gpt-6',
            name: 'GPT-6',
            context_window: 1_000_000,
            max_output: 200_000,
            cost_per_1m_in: 2,
            cost_per_1m_out: 12,
            tool_call: true,
            created: 4_000_000_000,
          },
        ],
      },
      ...(overrides.extraProvider
        ? [
            {
              id: 'newco',
              name: 'NewCo',
              type: 'openai-compat',
              auth: 'api_key',
              api_key_env: ['NEWCO_API_KEY'],
              base_url: 'https://api.newco.example/v1',
              models: [{ id: 'n1' }],
            },
          ]
        : []),
    ],
  };
}

/** A test app with its own user cache dir: a refreshed catalog lands there, not in the shared one. */
function catalogApp(options: Parameters<typeof makeTestApp>[0] = {}) {
  const workspace = tmpWorkspace();
  return makeTestApp({
    ...options,
    workspace,
    env: isolatedEnv(workspace, { XDG_CACHE_HOME: join(workspace, '.home', '.cache') }),
  });
}

function cachePath(app: { env: Record<string, string | undefined> }): string {
  return catalogCachePath(app.env)!;
}

async function serveJson(status: number, body: string) {
  const server = createServer((_req, res) =>
    res.writeHead(status, { 'content-type': 'application/json' }).end(body),
  );
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  onTestFinished(() => new Promise<void>((r) => server.close(() => r())));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}/catalog.json`;
}

describe('catalog inventory', () => {
  it('the embedded catalog is valid as bundled (it is not parsed at start-up)', () => {
    // parseCatalog throws on an invalid entry or a duplicate id; equality means no default is
    // left for the schema to fill in, so the unparsed file is what a parse would give.
    expect(parseCatalog(embeddedJson, 'embedded')).toEqual(embeddedJson);
    expect(embeddedCatalog()).toEqual(parseCatalog(embeddedJson, 'embedded'));
  });

  it('GEN-06 / CLI-10: svc models --json lists at least 15 providers with metadata', async () => {
    const app = await makeTestApp();
    const result = await svc(app, ['models', '--json']);
    expect(result.code, result.stderr).toBe(0);
    const providers = new Set(result.json.data.map((m: any) => m.provider));
    expect(providers.size).toBeGreaterThanOrEqual(15);
    for (const id of [
      'anthropic',
      'openai',
      'google',
      'google-vertex',
      'amazon-bedrock',
      'azure',
      'openrouter',
      'groq',
      'mistral',
      'xai',
      'deepseek',
      'cerebras',
      'togetherai',
      'fireworks',
      'deepinfra',
      'huggingface',
      'ollama',
      'lmstudio',
    ]) {
      expect(providers.has(id), id).toBe(true);
    }
    expect(result.json.data.find((m: any) => m.id === 'anthropic/claude-sonnet-4-5-20250929')).toMatchObject({
      object: 'model',
      owned_by: 'anthropic',
      context_window: 200000,
      max_output: 64000,
      cost_per_1m_in: 3,
      cost_per_1m_out: 15,
      tool_call: true,
      reasoning: true,
      attachments: true,
      catalog_source: 'embedded',
    });
    const text = await svc(app, ['models']);
    expect(text.stdout).toContain('anthropic/claude-sonnet-4-5-20250929');
    expect(text.stdout).toMatch(/\d+ models from \d+ providers/);
  });

  it('HTTP-02: GET /v1/models answers the OpenAI list shape, the same payload as the tool', async () => {
    const app = await makeTestApp();
    const http = await viaHttp(app, { method: 'GET', path: '/v1/models' }, {});
    expect(http.status).toBe(200);
    const body = http.body as {
      object: string;
      data: { id: string; object: string; created: number; owned_by: string }[];
    };
    expect(Object.keys(body).sort()).toEqual(['data', 'object']);
    expect(body.object).toBe('list');
    for (const m of body.data) {
      expect(typeof m.id).toBe('string');
      expect(m.object).toBe('model');
      expect(Number.isInteger(m.created)).toBe(true);
      expect(typeof m.owned_by).toBe('string');
    }
    expect(body).toEqual(await invokeTool(app, 'list_models', {}, { surface: 'agent' }));
  });

  it('AUTH-56: with no refresh run the catalog equals the embedded one', async () => {
    const app = await makeTestApp();
    const status = (await invokeTool(app, 'get_provider_status', {}, { surface: 'agent' })) as any;
    expect(status.counts.refreshed).toBe(0);
    expect(status.catalog.cache.exists).toBe(false);
    const list = (await invokeTool(app, 'list_models', {}, { surface: 'agent' })) as any;
    const embedded = embeddedCatalog().providers.reduce((n, p) => n + p.models.length, 0);
    expect(list.data).toHaveLength(embedded);
    expect(list.data.every((m: any) => m.catalog_source === 'embedded')).toBe(true);
  });
});

describe('svc update-providers', () => {
  it('CLI-11 / AUTH-55: refreshes from a file into the data-dir cache; config and credentials unchanged', async () => {
    const app = await catalogApp({ config: { providers: { openai: { api_key: 'cfg-key-000000000000' } } } });
    app.providers.store.set('groq', {
      kind: 'api_key',
      value: 'stored-000000000000',
      stored_by: 't',
      stored_at: 't',
    });
    const hash = (path: string) => createHash('sha256').update(readFileSync(path)).digest('hex');
    const before = {
      config: hash(join(app.workspace, 'svc.toml')),
      store: hash(credentialFilePath(app.env)),
    };
    writeFileSync(
      join(app.workspace, 'new-catalog.json'),
      JSON.stringify(refreshed({ extraProvider: true })),
    );
    const result = await svc(app, ['update-providers', 'new-catalog.json', '--json']);
    expect(result.code, result.stderr).toBe(0);
    expect(result.json).toMatchObject({
      version: '2099.01.01',
      providers: 2,
      added: ['newco'],
      updated: ['openai'],
      ignored: false,
    });
    expect(existsSync(cachePath(app))).toBe(true);
    const models = await svc(app, ['models', '--provider', 'openai', '--json']);
    expect(models.json.data.find((m: any) => m.id === 'openai/gpt-6')).toMatchObject({
      catalog_source: 'cache',
      created: 4_000_000_000,
    });
    const status = await svc(app, ['config', 'show-provider-status', '--json']);
    expect(status.json.providers.find((p: any) => p.id === 'openai').refreshed).toBe(true);
    expect(status.json.providers.find((p: any) => p.id === 'anthropic').refreshed).toBe(false);
    expect(status.json.providers.find((p: any) => p.id === 'newco')).toMatchObject({
      refreshed: true,
      ready: false,
    });
    expect({
      config: hash(join(app.workspace, 'svc.toml')),
      store: hash(credentialFilePath(app.env)),
    }).toEqual(before);
  });

  it('refreshes from a URL; a malformed file or an unreachable URL leaves the cache as it was and says why', async () => {
    const app = await catalogApp();
    const good = await serveJson(200, JSON.stringify(refreshed()));
    expect((await svc(app, ['update-providers', good])).code).toBe(0);
    const cached = readFileSync(cachePath(app), 'utf8');
    writeFileSync(
      join(app.workspace, 'broken.json'),
      '{"schema_version": 1, "version": "x", "providers": [{"id": "Bad Id"}]}',
    );
    const broken = await svc(app, ['update-providers', 'broken.json']);
    expect(broken.code).toBe(2);
    expect(broken.stderr).toMatch(/catalog broken\.json: providers\.0\.id: .*nothing was replaced/);
    writeFileSync(join(app.workspace, 'notjson.json'), '<html>');
    expect((await svc(app, ['update-providers', 'notjson.json'])).stderr).toContain('not JSON');
    const failing = await serveJson(503, 'down');
    const down = await svc(app, ['update-providers', failing]);
    expect(down.code).toBe(1);
    expect(down.stderr).toContain('HTTP 503; the cache was left as it was');
    const unreachable = await svc(app, ['update-providers', 'http://127.0.0.1:1/catalog.json']);
    expect(unreachable.stderr).toContain('unreachable');
    expect(readFileSync(cachePath(app), 'utf8')).toBe(cached);
    expect((await svc(app, ['update-providers', 'embedded'])).code).toBe(0);
    expect(existsSync(cachePath(app))).toBe(false);
  });

  it('CFG-12: with disable_provider_auto_update the cache is ignored and svc models shows the embedded catalog only', async () => {
    const app = await catalogApp({ config: { options: { disable_provider_auto_update: true } } });
    writeFileSync(join(app.workspace, 'c.json'), JSON.stringify(refreshed({ extraProvider: true })));
    const result = await svc(app, ['update-providers', 'c.json', '--json']);
    expect(result.json.ignored).toBe(true);
    const models = await svc(app, ['models', '--json']);
    expect(models.json.data.some((m: any) => m.id === 'openai/gpt-6' || m.provider === 'newco')).toBe(false);
    expect(models.json.data.every((m: any) => m.catalog_source === 'embedded')).toBe(true);
    const status = await svc(app, ['config', 'show-provider-status', '--json']);
    expect(status.json.catalog.cache).toMatchObject({ exists: true, ignored: true });
  });

  it('a malformed embedded-shaped cache file is reported, not fatal', async () => {
    const app = await catalogApp();
    const path = cachePath(app);
    await svc(app, ['update-providers', await serveJson(200, JSON.stringify(refreshed()))]);
    writeFileSync(path, '{"refreshed_at":"x","refreshed_from":"y","catalog":{"schema_version":2}}');
    const status = await svc(app, ['config', 'show-provider-status', '--json']);
    expect(status.code).toBe(0);
    expect(status.json.catalog.cache).toMatchObject({ exists: true, valid: false });
    expect(status.json.catalog.cache.error).toContain('schema_version');
  });
});
