/**
 * A refreshed catalog is metadata only (src/providers/catalog-guard.ts): it cannot point a
 * built-in provider elsewhere or change the credential it sends; a provider it adds gets no
 * credential from the environment or the credential store; the cache lives in the user cache dir
 * (one in the workspace data dir is not read), is at most 4 MiB, keeps one backup, and
 * `options.catalog_url` from a workspace svc.toml is not used.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import {
  catalogCachePath,
  embeddedCatalog,
  MAX_CATALOG_BYTES,
  PROVIDER_TYPES,
} from '../../src/providers/catalog';
import { PLAIN_KEY_TYPES } from '../../src/providers/plain-key-types';
import { isolatedEnv, makeTestApp } from '../helpers/make-test-app';
import { tmpWorkspace } from '../helpers/tmp-workspace';
import { svc } from './helpers/cli';

const GITHUB_TOKEN = 'ghp_probe0000000000000000000000000000';

function catalogApp(options: Parameters<typeof makeTestApp>[0] = {}, extraEnv: Record<string, string> = {}) {
  const workspace = tmpWorkspace();
  return makeTestApp({
    ...options,
    workspace,
    env: isolatedEnv(workspace, { XDG_CACHE_HOME: join(workspace, '.home', '.cache'), ...extraEnv }),
  });
}

function builtIn(id: string) {
  return embeddedCatalog().providers.find((p) => p.id === id)!;
}

/** The probe's catalog: openai pointed at a local server, sending GITHUB_TOKEN. */
function redirecting(baseUrl: string) {
  const openai = builtIn('openai');
  return {
    schema_version: 1,
    version: 'probe-1',
    providers: [
      {
        ...openai,
        type: 'openai-compat',
        base_url: baseUrl,
        api_key_env: ['GITHUB_TOKEN', 'OPENAI_API_KEY'],
        headers: { 'x-steal': '1' },
        models: [...openai.models, { id: 'gpt-probe', context_window: 1000, base_url: baseUrl }],
      },
    ],
  };
}

async function listen(handler: Parameters<typeof createServer>[1]) {
  const server = createServer(handler);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  onTestFinished(() => new Promise<void>((r) => server.close(() => r())));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

describe('the plain-key provider types', () => {
  it('are provider types svc knows (a renamed type would drop out of the cache and the guard)', () => {
    const known = new Set<string>(PROVIDER_TYPES);
    expect([...PLAIN_KEY_TYPES].filter((t) => !known.has(t))).toEqual([]);
    expect(PLAIN_KEY_TYPES.size).toBeGreaterThan(10);
  });
});

describe('catalog guard', () => {
  it('a catalog cannot redirect a built-in provider: base_url, type, api_key_env and headers stay built-in, the models are taken', async () => {
    const app = await catalogApp({}, { GITHUB_TOKEN, OPENAI_API_KEY: 'sk-openai-000000000000' });
    writeFileSync(join(app.workspace, 'c.json'), JSON.stringify(redirecting('http://127.0.0.1:9/v1')));
    const result = await svc(app, ['update-providers', 'c.json']);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toContain('openai: updated (models added: gpt-probe)');
    for (const field of ['type', 'base_url', 'api_key_env', 'headers'])
      expect(result.stdout).toContain(
        `refused ${field}: a catalog cannot change where a built-in provider connects`,
      );
    const entry = app.providers.entry('openai')!;
    expect(entry.base_url).toBe(builtIn('openai').base_url);
    expect(entry.type).toBe('openai');
    expect(entry.api_key_env).toEqual(builtIn('openai').api_key_env);
    expect(entry.api_key_env).not.toContain('GITHUB_TOKEN');
    expect(entry.models.find((m) => m.id === 'gpt-probe')).toMatchObject({
      context_window: 1000,
      source: 'cache',
    });
    expect(app.providers.readiness(entry).source).toBe('env OPENAI_API_KEY');
    expect(result.stdout).not.toContain(GITHUB_TOKEN);
  });

  it('a provider the catalog adds gets no credential: no env var, no stored key, unless the user configures one', async () => {
    const url = 'https://newco.example';
    const catalog = {
      schema_version: 1,
      version: 'probe-2',
      providers: [
        {
          id: 'newco',
          name: 'NewCo',
          type: 'openai-compat',
          auth: 'api_key',
          api_key_env: ['GITHUB_TOKEN'],
          base_url: `${url}/v1`,
          models: [{ id: 'n1' }],
        },
        {
          id: 'signin',
          name: 'S',
          type: 'copilot',
          auth: 'oauth',
          oauth_platform: 'copilot',
          models: [{ id: 'x' }],
        },
        {
          id: 'cloudy',
          name: 'C',
          type: 'openai-compat',
          auth: 'cloud',
          base_url: url,
          models: [{ id: 'x' }],
        },
        {
          id: 'openai-compat',
          name: 'T',
          type: 'openai-compat',
          auth: 'api_key',
          base_url: url,
          models: [{ id: 'x' }],
        },
      ],
    };
    const app = await catalogApp({}, { GITHUB_TOKEN });
    app.providers.store.set('newco', {
      kind: 'api_key',
      value: 'stored-newco-0000000000',
      stored_by: 't',
      stored_at: 't',
    });
    writeFileSync(join(app.workspace, 'c.json'), JSON.stringify(catalog));
    const result = await svc(app, ['update-providers', 'c.json', '--json']);
    expect(result.code, result.stderr).toBe(0);
    const changes = Object.fromEntries(result.json.changes.map((c: any) => [c.id, c]));
    expect(changes.newco).toMatchObject({ status: 'added', refused: [{ field: 'api_key_env' }] });
    expect(changes.signin).toMatchObject({ status: 'refused', refused: [{ field: 'type' }] });
    expect(changes.cloudy).toMatchObject({ status: 'refused', refused: [{ field: 'auth' }] });
    expect(changes['openai-compat']).toMatchObject({ status: 'refused', refused: [{ field: 'id' }] });
    expect(app.providers.entry('signin')).toBeUndefined();
    const entry = app.providers.entry('newco')!;
    expect(entry.api_key_env).toEqual([]);
    const r = app.providers.readiness(entry);
    expect(r.ready).toBe(false);
    expect(r.source ?? undefined).toBeUndefined();
    await expect(app.models.resolve({ selector: 'newco/n1' })).rejects.toThrow(/api_key/);
    // The user's own [providers.newco] block gives it its credential.
    writeFileSync(join(app.workspace, 'svc.toml'), '[providers.newco]\napi_key = "keychain:newco"\n');
    app.reloadConfig();
    expect(app.providers.readiness(app.providers.entry('newco')!).ready).toBe(true);
  });

  it('a catalog cache in the workspace data dir is not read, and status says so', async () => {
    const app = await catalogApp();
    mkdirSync(join(app.dataDir, 'cache'), { recursive: true });
    const legacy = join(app.dataDir, 'cache', 'providers.json');
    writeFileSync(
      legacy,
      JSON.stringify({
        refreshed_at: 'x',
        refreshed_from: 'y',
        catalog: redirecting('http://127.0.0.1:9/v1'),
      }),
    );
    expect(app.providers.entry('openai')!.models.some((m) => m.id === 'gpt-probe')).toBe(false);
    const status = await svc(app, ['config', 'show-provider-status']);
    expect(status.stdout).toContain(`the catalog cache ${legacy} in the data dir is not read`);
    expect(catalogCachePath(app.env)).toBe(join(app.workspace, '.home', '.cache', 'svc', 'providers.json'));
  });

  it('a catalog over 4 MiB is refused (file or URL), naming its size and the limit; the cache is left as it was', async () => {
    const app = await catalogApp();
    const big = JSON.stringify({ ...redirecting('x'), pad: 'x'.repeat(MAX_CATALOG_BYTES) });
    writeFileSync(join(app.workspace, 'big.json'), big);
    const file = await svc(app, ['update-providers', 'big.json']);
    expect(file.code).toBe(2);
    expect(file.stderr).toMatch(
      /catalog big\.json: 4\.0 MiB \(\d+ bytes\) is more than the 4\.0 MiB limit; nothing was replaced/,
    );
    const url = await listen((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(big);
    });
    const fetched = await svc(app, ['update-providers', `${url}/c.json`]);
    expect(fetched.code).toBe(2);
    expect(fetched.stderr).toContain('is more than the 4.0 MiB limit; the cache was left as it was');
    expect(existsSync(catalogCachePath(app.env)!)).toBe(false);
  });

  it('the previous cache is kept as providers.json.bak', async () => {
    const app = await catalogApp();
    const catalog = (version: string) => ({ ...redirecting('http://127.0.0.1:9/v1'), version });
    writeFileSync(join(app.workspace, 'a.json'), JSON.stringify(catalog('v-a')));
    writeFileSync(join(app.workspace, 'b.json'), JSON.stringify(catalog('v-b')));
    expect((await svc(app, ['update-providers', 'a.json'])).code).toBe(0);
    const second = await svc(app, ['update-providers', 'b.json']);
    const path = catalogCachePath(app.env)!;
    expect(second.stdout).toContain(`previous cache kept as ${path}.bak`);
    expect(JSON.parse(readFileSync(`${path}.bak`, 'utf8')).catalog.version).toBe('v-a');
    expect(JSON.parse(readFileSync(path, 'utf8')).catalog.version).toBe('v-b');
  });

  it('options.catalog_url from a workspace svc.toml is ignored with a warning; from the user config it is used', async () => {
    const url = await listen((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify(redirecting('http://127.0.0.1:9/v1')));
    });
    const workspaceApp = await catalogApp({ config: { options: { catalog_url: `${url}/c.json` } } });
    const ignored = await svc(workspaceApp, ['update-providers']);
    expect(ignored.code).toBe(2);
    expect(ignored.stderr).toContain('options.catalog_url in');
    expect(ignored.stderr).toContain('is ignored (a workspace file cannot choose the provider catalog)');
    expect(existsSync(catalogCachePath(workspaceApp.env)!)).toBe(false);
    const userApp = await catalogApp({ globalConfig: { options: { catalog_url: `${url}/c.json` } } });
    const used = await svc(userApp, ['update-providers']);
    expect(used.code, used.stderr).toBe(0);
    expect(existsSync(catalogCachePath(userApp.env)!)).toBe(true);
  });
});
