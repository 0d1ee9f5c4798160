import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { isolatedEnv } from '../../test/helpers/make-test-app';
import { tmpWorkspace } from '../../test/helpers/tmp-workspace';
import { SvcError } from '../errors';
import { createRedactor } from '../redact';
import { explainConfig } from './explain';
import { interpolate, loadConfig } from './load';

function setup(files: Record<string, string>, envExtra: Record<string, string> = {}) {
  const workspace = tmpWorkspace({ files });
  const env = isolatedEnv(workspace, envExtra);
  return { workspace, env, globalFile: join(env.XDG_CONFIG_HOME!, 'svc', 'svc.toml') };
}

function writeGlobal(path: string, text: string) {
  mkdirSync(join(path, '..'), { recursive: true });
  writeFileSync(path, text);
}

describe('config sources and merge order', () => {
  it('CFG-02: merges provider blocks key by key, later sources overriding single fields', () => {
    const { workspace, env, globalFile } = setup({
      'svc.toml': '[providers.acme]\nbase_url = "http://127.0.0.1:9/v1"\n',
      '.svc/svc.toml': '[providers.acme]\ntype = "openai-compat"\n',
    });
    writeGlobal(
      globalFile,
      '[providers.acme]\nbase_url = "http://global/v1"\napi_key = "k-global-123456"\nname = "Acme"\n',
    );
    const loaded = loadConfig({ workspace, env });
    expect(loaded.config.providers.acme).toEqual({
      base_url: 'http://127.0.0.1:9/v1',
      api_key: 'k-global-123456',
      name: 'Acme',
      type: 'openai-compat',
    });
    expect(loaded.provenance.get('providers.acme.base_url')?.path).toBe(join(workspace, 'svc.toml'));
    expect(loaded.provenance.get('providers.acme.api_key')?.path).toBe(globalFile);
    expect(loaded.provenance.get('providers.acme.type')?.path).toBe(join(workspace, '.svc', 'svc.toml'));
  });

  it('applies defaults < global < workspace < .svc < SVC_CONFIG < env override < --config < -c', () => {
    const { workspace, env, globalFile } = setup(
      {
        'svc.toml': '[options]\nmax_steps = 2\n[models]\nlarge = "ws/m"\n',
        '.svc/svc.toml': '[options]\nmax_steps = 3\n',
        'env.toml': '[options]\nmax_steps = 4\n',
        'flag.toml': '[options]\nmax_steps = 5\n',
      },
      { SVC_CONFIG: 'env.toml', SVC_SMALL_MODEL: 'envp/small' },
    );
    writeGlobal(globalFile, '[options]\nmax_steps = 1\nauto_compact = false\n');
    const base = { workspace, env };
    expect(loadConfig({ ...base, env: { ...env, SVC_CONFIG: undefined } }).config.options.max_steps).toBe(3);
    expect(loadConfig(base).config.options.max_steps).toBe(4);
    expect(loadConfig({ ...base, configFile: 'flag.toml' }).config.options.max_steps).toBe(5);
    const top = loadConfig({ ...base, configFile: 'flag.toml', overrides: ['options.max_steps=6'] });
    expect(top.config.options.max_steps).toBe(6);
    expect(top.config.options.auto_compact).toBe(false);
    expect(top.config.models).toEqual({ large: 'ws/m', small: 'envp/small' });

    const fields = explainConfig(top, createRedactor());
    const source = (key: string) => fields.find((f) => f.key === key);
    expect(source('options.max_steps')).toMatchObject({
      value: 6,
      source: '-c options.max_steps',
      source_kind: 'override',
    });
    expect(source('options.auto_compact')).toMatchObject({ source: globalFile, source_kind: 'global' });
    expect(source('models.large')).toMatchObject({
      source: join(workspace, 'svc.toml'),
      source_kind: 'workspace',
    });
    expect(source('models.small')).toMatchObject({ source: 'env SVC_SMALL_MODEL', source_kind: 'env' });
    expect(source('options.compaction_threshold')).toMatchObject({
      value: 0.85,
      source: 'default',
      source_kind: 'default',
    });
  });

  it('explains a known field nothing sets as unset, and refuses an unknown key', () => {
    const { workspace, env } = setup({});
    const loaded = loadConfig({ workspace, env });
    expect(explainConfig(loaded, createRedactor(), 'models.large')).toEqual([
      { key: 'models.large', value: null, source: 'default (unset)', source_kind: 'default' },
    ]);
    expect(explainConfig(loaded, createRedactor(), 'providers.acme.base_url')).toEqual([
      { key: 'providers.acme.base_url', value: null, source: 'default (unset)', source_kind: 'default' },
    ]);
    expect(() => explainConfig(loaded, createRedactor(), 'models.huge')).toThrow(
      /no config field "models.huge"/,
    );
    expect(() => explainConfig(loaded, createRedactor(), 'no.such.key')).toThrow(/no config field/);
  });

  it('parses -c values as TOML values, falling back to a bare string', () => {
    const { workspace, env } = setup({});
    const loaded = loadConfig({
      workspace,
      env,
      overrides: [
        'options.operating_packs=true',
        'options.disabled_tools=["bash","fetch"]',
        'models.large=acme/model-1',
      ],
    });
    expect(loaded.config.options.operating_packs).toBe(true);
    expect(loaded.config.options.disabled_tools).toEqual(['bash', 'fetch']);
    expect(loaded.config.models.large).toBe('acme/model-1');
  });
});

describe('interpolation', () => {
  it('CFG-05: resolves ${ENV} at load and remembers the value as a secret', () => {
    const { workspace, env } = setup(
      { 'svc.toml': '[providers.acme]\napi_key = "${ACME_KEY}"\n' },
      { ACME_KEY: 'sk-live-abcdef123456' },
    );
    const loaded = loadConfig({ workspace, env });
    expect(loaded.config.providers.acme.api_key).toBe('sk-live-abcdef123456');
    expect(loaded.interpolated).toContain('sk-live-abcdef123456');
  });

  it('keeps keychain:<provider> sentinels for the credential store', () => {
    const { workspace, env } = setup({ 'svc.toml': '[providers.acme]\napi_key = "keychain:acme"\n' });
    expect(loadConfig({ workspace, env }).config.providers.acme.api_key).toBe('keychain:acme');
  });

  it('supports defaults and escapes', () => {
    expect(interpolate('${A:-x}/${B}', { B: 'b' }).value).toBe('x/b');
    expect(interpolate('$${A}', { A: 'no' }).value).toBe('${A}');
    expect(interpolate('${MISSING}', {}).missing).toBe('MISSING');
  });

  it('names the file, line, key and variable when ${VAR} is unset (exit code 2)', () => {
    const { workspace, env } = setup({
      'svc.toml': '# x\n[providers.acme]\nbase_url = "http://x"\napi_key = "${NOPE_KEY}"\n',
    });
    let error: unknown;
    try {
      loadConfig({ workspace, env });
    } catch (e) {
      error = e;
    }
    expect(SvcError.is(error)).toBe(true);
    const e = error as SvcError;
    expect(e.exitCode).toBe(2);
    expect(e.message).toContain(`${join(workspace, 'svc.toml')}:4`);
    expect(e.message).toContain('providers.acme.api_key');
    expect(e.message).toContain('NOPE_KEY is not set');
  });
});

describe('bad config', () => {
  it('reports a TOML syntax error with file and line', () => {
    const { workspace, env } = setup({ 'svc.toml': '[options]\nmax_steps = \n' });
    expect(() => loadConfig({ workspace, env })).toThrowError(/svc\.toml:2: TOML syntax error/);
  });

  it('reports a type error naming the key, the expected type and the line', () => {
    const { workspace, env } = setup({ 'svc.toml': '[options]\nauto_compact = true\nmax_steps = "many"\n' });
    expect(() => loadConfig({ workspace, env })).toThrowError(
      /svc\.toml:3: options\.max_steps: expected number, got string "many"/,
    );
  });

  it('CONFIG-SECRET-1: an error quoting a value interpolated from the environment, or a secret-named variable, masks it', () => {
    const secret = 'sk-live-interpolated-4f9a2c';
    const { workspace, env } = setup(
      { 'svc.toml': '[options]\nmax_steps = "${MY_API_KEY}"\n' },
      { MY_API_KEY: secret },
    );
    const error = (() => {
      try {
        loadConfig({ workspace, env });
      } catch (e) {
        return e as Error;
      }
    })();
    expect(error?.message).toMatch(
      /svc\.toml:2: options\.max_steps: expected number, got string "\[REDACTED\]"$/,
    );
    expect(JSON.stringify(error)).not.toContain(secret);
    // A literal value in the file that a secret-named variable also holds is masked too.
    const other = setup(
      { 'svc.toml': '[options]\nmax_steps = "tok-literal-93b1e7"\n' },
      { GH_TOKEN: 'tok-literal-93b1e7' },
    );
    expect(() => loadConfig({ workspace: other.workspace, env: other.env })).toThrowError(
      /got string "\[REDACTED\]"$/,
    );
  });

  it('CLI-FIRST-1: a value out of range says the bound in words, not zod\'s "Too small: expected …"', () => {
    const cases: [string, RegExp][] = [
      [
        '[options]\nmax_steps = -5\n',
        /svc\.toml:2: options\.max_steps: expected a number more than 0, got number -5$/,
      ],
      [
        '[models]\nlarge = ""\n',
        /svc\.toml:2: models\.large: expected a string of at least 1 character, got string ""$/,
      ],
      [
        '[services.http]\nport = 99999\n',
        /services\.http\.port: expected a number at most 65535, got number 99999$/,
      ],
    ];
    for (const [text, message] of cases) {
      const { workspace, env } = setup({ 'svc.toml': text });
      expect(() => loadConfig({ workspace, env }), text).toThrowError(message);
    }
  });

  it('CLI-FIRST-9: a bad -c value names its key once, after -c (it was "-c options.max_steps: options.max_steps: …")', () => {
    const cases: [string, string][] = [
      ['options.max_steps=0', 'config: -c options.max_steps: expected a number more than 0, got number 0'],
      ['providers.x={ base_url = 42 }', 'config: -c providers.x.base_url: expected string, got number 42'],
    ];
    for (const [override, message] of cases) {
      const { workspace, env } = setup({});
      expect(() => loadConfig({ workspace, env, overrides: [override] }), override).toThrowError(message);
    }
  });

  it('refuses a node staleness shorter than two heartbeats, naming the key and why', () => {
    const { workspace, env } = setup({
      'svc.toml': '[store]\nnode_heartbeat_ms = 5000\nnode_stale_ms = 6000\n',
    });
    expect(() => loadConfig({ workspace, env })).toThrowError(
      /store\.node_stale_ms: node_stale_ms must be at least twice node_heartbeat_ms/,
    );
  });

  it('reports a bad enum value with the allowed values', () => {
    const { workspace, env } = setup({
      'svc.toml': '[providers.x.provider_options]\nauth_source = "magic"\n',
    });
    expect(() => loadConfig({ workspace, env })).toThrowError(
      /auth_source: expected one of "auto", "env", "profile", "bearer", "container"/,
    );
  });

  it('CFG-08: accepts every auth_source value', () => {
    for (const value of ['auto', 'env', 'profile', 'bearer', 'container']) {
      const { workspace, env } = setup({
        'svc.toml': `[providers.x.provider_options]\nauth_source = "${value}"\nregion = "us-east-1"\n`,
      });
      expect(loadConfig({ workspace, env }).config.providers.x.provider_options?.auth_source).toBe(value);
    }
  });

  it('warns about unknown keys instead of failing, naming the file', () => {
    const { workspace, env } = setup({
      'svc.toml': '[options]\nmax_steps = 7\nfrobnicate = 1\n[mystery]\na = 1\n',
    });
    const loaded = loadConfig({ workspace, env });
    expect(loaded.config.options.max_steps).toBe(7);
    expect(loaded.warnings).toEqual(
      expect.arrayContaining([
        `unknown config key options.frobnicate (in ${join(workspace, 'svc.toml')}); ignored`,
        `unknown config key mystery (in ${join(workspace, 'svc.toml')}); ignored`,
      ]),
    );
  });

  it('fails when an explicitly named config file is missing', () => {
    const { workspace, env } = setup({});
    expect(() => loadConfig({ workspace, env, configFile: 'nope.toml' })).toThrowError(
      /nope\.toml: file not found/,
    );
  });

  it('tolerant mode returns every problem instead of throwing', () => {
    const { workspace, env } = setup({
      'svc.toml': '[options]\nmax_steps = "x"\n',
      '.svc/svc.toml': 'oops = \n',
    });
    const loaded = loadConfig({ workspace, env }, { tolerant: true });
    expect(loaded.errors.length).toBe(2);
    expect(loaded.files.find((f) => f.path.endsWith('.svc/svc.toml'))?.error).toMatch(/TOML syntax error/);
    expect(loaded.config.options.max_steps).toBe(50);
  });
});
