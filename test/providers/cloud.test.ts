/**
 * Cloud identity. Bedrock: each AWS variable takes effect, default-region/profile fallbacks,
 * SVC_ overrides win, auth_source pins the source (auto when unset), a stored bearer token beats
 * ambient bearer env vars, container mode fetches from the container-credentials URI and still
 * needs a region, and `svc auth bedrock token` stores a token behind a keychain sentinel. Vertex
 * (project + location) and Azure (endpoint, key or directory identity, API version) report ready.
 * `svc auth bedrock [doctor]` and /config-status report the sources.
 */

import { mkdirSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { generateText } from 'ai';
import { describe, expect, it, onTestFinished } from 'vitest';
import { fakeProvider, reply } from '../helpers/fake-provider';
import { isolatedEnv, makeTestApp } from '../helpers/make-test-app';
import { viaHttp } from '../helpers/surfaces';
import { tmpWorkspace } from '../helpers/tmp-workspace';
import { svc } from './helpers/cli';
import { fakeBedrock } from './helpers/fake-wires';

const MODEL = 'amazon-bedrock/amazon.nova-lite-v1:0';

async function bedrockApp(
  env: Record<string, string>,
  options: Record<string, unknown> = {},
  extra: Record<string, unknown> = {},
) {
  const fake = await fakeBedrock([{ text: 'one' }, { text: 'two' }]);
  const workspace = tmpWorkspace();
  const app = await makeTestApp({
    workspace,
    env: isolatedEnv(workspace, env),
    config: {
      providers: {
        'amazon-bedrock': {
          base_url: fake.url,
          ...(Object.keys(options).length ? { provider_options: options } : {}),
        },
      },
      models: { large: MODEL },
      ...extra,
    },
  });
  return { app, fake };
}

async function call(app: Awaited<ReturnType<typeof makeTestApp>>) {
  return generateText({ model: (await app.models.resolve()).language_model, prompt: 'x', maxRetries: 0 });
}

function credentialOf(fake: { requests: { headers: Record<string, unknown> }[] }, i = 0) {
  return String(fake.requests[i].headers.authorization);
}

function awsFiles(home: string, credentials: string, config = '') {
  mkdirSync(join(home, '.aws'), { recursive: true });
  writeFileSync(join(home, '.aws', 'credentials'), credentials);
  writeFileSync(join(home, '.aws', 'config'), config);
}

async function containerServer(body: Record<string, string>) {
  const seen: { path: string; authorization?: string }[] = [];
  const server = createServer((req, res) => {
    seen.push({ path: req.url ?? '', authorization: req.headers.authorization });
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(body));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  onTestFinished(() => new Promise<void>((r) => server.close(() => r())));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, seen };
}

const KEYS = {
  AWS_ACCESS_KEY_ID: 'AKIAENVKEY0000000000',
  AWS_SECRET_ACCESS_KEY: 'env-secret-key-0000000000000000000000000',
};

describe('bedrock identity', () => {
  it('AUTH-21: access key id, secret, session token and region from the env sign the request', async () => {
    const { app, fake } = await bedrockApp({
      ...KEYS,
      AWS_SESSION_TOKEN: 'session-token-000000000000',
      AWS_REGION: 'us-west-2',
    });
    expect((await call(app)).text).toBe('one');
    expect(credentialOf(fake)).toMatch(/Credential=AKIAENVKEY0000000000\/\d{8}\/us-west-2\/bedrock\//);
    expect(fake.requests[0].headers['x-amz-security-token']).toBe('session-token-000000000000');
  });

  it('AUTH-21: a named profile (AWS_PROFILE) and a bearer token (AWS_BEARER_TOKEN_BEDROCK) take effect', async () => {
    const profile = await bedrockApp({ AWS_PROFILE: 'work', AWS_REGION: 'us-east-1' });
    awsFiles(
      profile.app.env.HOME!,
      '[work]\naws_access_key_id = AKIAPROFILE000000000\naws_secret_access_key = profile-secret-00000000000000\n',
    );
    await call(profile.app);
    expect(credentialOf(profile.fake)).toContain('Credential=AKIAPROFILE000000000/');
    const bearer = await bedrockApp({
      AWS_BEARER_TOKEN_BEDROCK: 'bedrock-api-key-0000000000',
      AWS_REGION: 'us-east-1',
    });
    await call(bearer.app);
    expect(credentialOf(bearer.fake)).toBe('Bearer bedrock-api-key-0000000000');
  });

  it('AUTH-22: only the default-region and default-profile fallbacks set → they are used', async () => {
    const { app, fake } = await bedrockApp({
      AWS_DEFAULT_PROFILE: 'fallback',
      AWS_DEFAULT_REGION: 'ap-south-1',
    });
    awsFiles(
      app.env.HOME!,
      '[fallback]\naws_access_key_id = AKIAFALLBACK00000000\naws_secret_access_key = fallback-secret-000000000000\n',
    );
    await call(app);
    expect(credentialOf(fake)).toMatch(/Credential=AKIAFALLBACK00000000\/\d{8}\/ap-south-1\//);
    const doctor = await svc(app, ['auth', 'bedrock', 'doctor', '--json']);
    expect(doctor.json.providers[0]).toMatchObject({
      profile: 'fallback',
      profile_source: 'env AWS_DEFAULT_PROFILE',
      region_source: 'env AWS_DEFAULT_REGION',
    });
  });

  it('AUTH-23: SVC_-prefixed process-local overrides win over the plain names', async () => {
    const { app, fake } = await bedrockApp({
      ...KEYS,
      SVC_AWS_ACCESS_KEY_ID: 'AKIASVCOVERRIDE00000',
      SVC_AWS_SECRET_ACCESS_KEY: 'svc-secret-000000000000000000000',
      AWS_REGION: 'us-east-1',
      SVC_AWS_REGION: 'eu-central-1',
    });
    await call(app);
    expect(credentialOf(fake)).toMatch(/Credential=AKIASVCOVERRIDE00000\/\d{8}\/eu-central-1\//);
  });

  it('AUTH-24: a pinned auth_source fixes the source even when another is present', async () => {
    const env = await bedrockApp(
      { ...KEYS, AWS_PROFILE: 'work', AWS_REGION: 'us-east-1' },
      { auth_source: 'env' },
    );
    awsFiles(
      env.app.env.HOME!,
      '[work]\naws_access_key_id = AKIAPROFILE000000000\naws_secret_access_key = p-secret-000000000000000000\n',
    );
    await call(env.app);
    expect(credentialOf(env.fake)).toContain('Credential=AKIAENVKEY0000000000/');
    const profile = await bedrockApp(
      { ...KEYS, AWS_PROFILE: 'work', AWS_REGION: 'us-east-1' },
      { auth_source: 'profile' },
    );
    awsFiles(
      profile.app.env.HOME!,
      '[work]\naws_access_key_id = AKIAPROFILE000000000\naws_secret_access_key = p-secret-000000000000000000\n',
    );
    await call(profile.app);
    expect(credentialOf(profile.fake)).toContain('Credential=AKIAPROFILE000000000/');
    const bearer = await bedrockApp({ ...KEYS, AWS_REGION: 'us-east-1' }, { auth_source: 'bearer' });
    await expect(bearer.app.models.resolve()).rejects.toMatchObject({
      message: expect.stringContaining('auth_source = "bearer" but no bearer token'),
    });
  });

  it('AUTH-25 / AUTH-27 / AUTH-28: a token stored with --token-stdin writes the keychain sentinel and wins over ambient bearer env vars in auto', async () => {
    const { app, fake } = await bedrockApp({
      AWS_BEARER_TOKEN_BEDROCK: 'ambient-bearer-0000000000',
      AWS_REGION: 'us-east-1',
    });
    const stored = await svc(app, ['auth', 'bedrock', 'token', 'amazon-bedrock', '--token-stdin', '--json'], {
      stdin: 'stored-bearer-00000000000\n',
    });
    expect(stored.code, stored.stderr).toBe(0);
    expect(stored.json).toMatchObject({ provider: 'amazon-bedrock', kind: 'bearer', sentinel_written: true });
    app.reloadConfig();
    expect(app.config.providers['amazon-bedrock'].api_key).toBe('keychain:amazon-bedrock');
    await call(app);
    expect(credentialOf(fake)).toBe('Bearer stored-bearer-00000000000');
    const status = await svc(app, [
      'config',
      'show-provider-status',
      '--provider',
      'amazon-bedrock',
      '--json',
    ]);
    expect(status.json.providers[0]).toMatchObject({ ready: true, ambiguous: true });
    expect(status.json.providers[0].credential_source).toMatch(/^stored_bearer/);
  });

  it('AUTH-26: container mode fetches credentials from the full URI (with the authorization token) and from the relative URI', async () => {
    const creds = await containerServer({
      AccessKeyId: 'ASIACONTAINER0000000',
      SecretAccessKey: 'container-secret-0000000000',
      Token: 'container-session-000000',
    });
    const full = await bedrockApp(
      {
        AWS_CONTAINER_CREDENTIALS_FULL_URI: `${creds.url}/creds`,
        AWS_CONTAINER_AUTHORIZATION_TOKEN: 'ctoken-1234',
        AWS_REGION: 'us-east-1',
      },
      { auth_source: 'container' },
    );
    await call(full.app);
    expect(credentialOf(full.fake)).toContain('Credential=ASIACONTAINER0000000/');
    expect(full.fake.requests[0].headers['x-amz-security-token']).toBe('container-session-000000');
    expect(creds.seen[0]).toEqual({ path: '/creds', authorization: 'ctoken-1234' });
    const relative = await bedrockApp(
      { AWS_CONTAINER_CREDENTIALS_RELATIVE_URI: '/v2/credentials/abc' },
      { auth_source: 'container', region: 'us-east-2' },
      { auth: { bedrock: { container_host: creds.url } } },
    );
    await call(relative.app);
    expect(creds.seen[1].path).toBe('/v2/credentials/abc');
    expect(credentialOf(relative.fake)).toMatch(/\/us-east-2\/bedrock\//);
  });

  it('CFG-11: container mode without a region is an error', async () => {
    const { app } = await bedrockApp(
      { AWS_CONTAINER_CREDENTIALS_RELATIVE_URI: '/v2/credentials/abc' },
      { auth_source: 'container' },
    );
    await expect(app.models.resolve()).rejects.toMatchObject({
      code: 'config_error',
      message: expect.stringContaining('container mode still requires a region'),
    });
    const doctor = await svc(app, ['auth', 'bedrock', 'doctor', '--json']);
    expect(doctor.json.providers[0]).toMatchObject({ ready: false, region: null, source: 'container' });
  });

  it('CFG-08: every auth_source value passes config validation', async () => {
    for (const value of ['auto', 'env', 'profile', 'bearer', 'container']) {
      const { app } = await bedrockApp({}, { auth_source: value, region: 'us-east-1' });
      expect(app.config.providers['amazon-bedrock'].provider_options?.auth_source).toBe(value);
    }
    const workspace = tmpWorkspace({
      files: { 'svc.toml': '[providers.amazon-bedrock.provider_options]\nauth_source = "magic"\n' },
    });
    await expect(makeTestApp({ workspace })).rejects.toMatchObject({
      message: expect.stringContaining('auth_source'),
    });
  });

  it('CFG-09 / CFG-10 / CLI-03 / CLI-04: unset and auto report the same source; region shown; doctor lists every source', async () => {
    const unset = await bedrockApp({ ...KEYS }, { region: 'sa-east-1' });
    const auto = await bedrockApp({ ...KEYS }, { region: 'sa-east-1', auth_source: 'auto' });
    const a = await svc(unset.app, ['auth', 'bedrock', '--json']);
    const b = await svc(auto.app, ['auth', 'bedrock', '--json']);
    expect(a.code, a.stderr).toBe(0);
    expect(a.json.providers[0]).toMatchObject({
      auth_source: 'auto',
      auth_source_configured: false,
      source: 'env_keys',
      region: 'sa-east-1',
    });
    expect(b.json.providers[0]).toMatchObject({
      auth_source: 'auto',
      auth_source_configured: true,
      source: 'env_keys',
    });
    expect(a.json.providers[0].region_source).toBe('providers.amazon-bedrock.provider_options.region');
    const doctor = await svc(unset.app, ['auth', 'bedrock', 'doctor']);
    for (const source of [
      'stored_bearer',
      'config_bearer',
      'env_keys',
      'env_bearer',
      'profile',
      'container',
    ]) {
      expect(doctor.stdout).toContain(source);
    }
    expect(doctor.stdout).toContain('region: sa-east-1');
    expect(doctor.stdout).not.toContain(KEYS.AWS_SECRET_ACCESS_KEY);
  });

  it('AUTH-07: /config-status reports the cloud credential sources', async () => {
    const { app } = await bedrockApp({
      ...KEYS,
      AWS_REGION: 'us-east-1',
      GOOGLE_VERTEX_PROJECT: 'p1',
      GOOGLE_VERTEX_LOCATION: 'europe-west4',
    });
    const http = await viaHttp(app, { method: 'GET', path: '/v1/config-status' }, {});
    expect(http.status).toBe(200);
    const cloud = (http.body as any).cloud_identity;
    expect(cloud.bedrock[0]).toMatchObject({
      provider: 'amazon-bedrock',
      ready: true,
      source: 'env_keys',
      region: 'us-east-1',
    });
    expect(cloud.vertex[0]).toMatchObject({ project: 'p1', location: 'europe-west4', ready: true });
    expect(cloud.azure[0]).toMatchObject({ ready: false });
    expect(http.text).not.toContain(KEYS.AWS_SECRET_ACCESS_KEY);
  });
});

describe('vertex and azure identity', () => {
  it('AUTH-18: vertex is ready with a project id and a location from the env', async () => {
    const workspace = tmpWorkspace();
    const app = await makeTestApp({
      workspace,
      env: isolatedEnv(workspace, { GOOGLE_CLOUD_PROJECT: 'proj-9', GOOGLE_CLOUD_LOCATION: 'us-central1' }),
    });
    const result = await svc(app, ['auth', 'vertex', '--json']);
    expect(result.code, result.stderr).toBe(0);
    expect(result.json.providers[0]).toMatchObject({
      ready: true,
      project: 'proj-9',
      project_source: 'env GOOGLE_CLOUD_PROJECT',
      location: 'us-central1',
    });
  });

  it('AUTH-19: azure is ready with endpoint, key and API version', async () => {
    const workspace = tmpWorkspace();
    const app = await makeTestApp({
      workspace,
      env: isolatedEnv(workspace, {
        AZURE_OPENAI_ENDPOINT: 'https://myres.openai.azure.com',
        AZURE_OPENAI_API_KEY: 'azure-key-00000000000000',
        AZURE_OPENAI_API_VERSION: '2024-10-21',
      }),
    });
    const result = await svc(app, ['auth', 'azure', '--json']);
    expect(result.json.providers[0]).toMatchObject({
      ready: true,
      base_url: 'https://myres.openai.azure.com/openai',
      api_version: '2024-10-21',
      api_version_source: 'env AZURE_OPENAI_API_VERSION',
      credential: 'api_key',
    });
  });

  it('AUTH-20: with directory identity no key is needed; the Entra token is the bearer', async () => {
    const tokenCalls: string[] = [];
    const authority = createServer((req, res) => {
      let body = '';
      req.on('data', (d) => (body += d));
      req.on('end', () => {
        tokenCalls.push(`${req.url} ${body}`);
        res
          .writeHead(200, { 'content-type': 'application/json' })
          .end(JSON.stringify({ access_token: 'entra-token-0000000000', expires_in: 3600 }));
      });
    });
    await new Promise<void>((r) => authority.listen(0, '127.0.0.1', r));
    onTestFinished(() => new Promise<void>((r) => authority.close(() => r())));
    const fake = await fakeProvider([reply().text('via entra')]);
    const workspace = tmpWorkspace();
    const app = await makeTestApp({
      workspace,
      env: isolatedEnv(workspace, {
        AZURE_TENANT_ID: 'tenant-1',
        AZURE_CLIENT_ID: 'client-1',
        AZURE_CLIENT_SECRET: 'client-secret-000000000',
        AZURE_AUTHORITY_HOST: `http://127.0.0.1:${(authority.address() as AddressInfo).port}`,
      }),
      config: {
        providers: { azure: { base_url: fake.url, provider_options: { use_directory_identity: true } } },
        models: { large: 'azure/gpt-5' },
      },
    });
    const status = await svc(app, ['config', 'show-provider-status', '--provider', 'azure', '--json']);
    expect(status.json.providers[0]).toMatchObject({ ready: true });
    expect(status.json.providers[0].cloud).toMatchObject({
      credential: 'directory_identity',
      directory_identity: 'client_secret',
    });
    expect((await call(app)).text).toBe('via entra');
    expect(fake.requests[0].headers.authorization).toBe('Bearer entra-token-0000000000');
    expect(tokenCalls[0]).toMatch(/^\/tenant-1\/oauth2\/v2\.0\/token .*grant_type=client_credentials/);
  });
});
