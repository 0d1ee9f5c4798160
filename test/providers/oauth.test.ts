/**
 * `svc auth <platform>` against a fake authorization server on 127.0.0.1, for every flow:
 * - copilot: a GitHub token on disk is reused (no device flow); without one, the device flow runs;
 * - hyper: device authorization with a verification code, then the token exchange;
 * - openrouter: browser PKCE with a loopback callback, the API key stored;
 * - chatgpt: the Codex CLI session is inherited and refreshed (rotated token cached in svc's data
 *   dir, vendor file untouched); without it, browser PKCE; the credential is a session;
 * - after each flow the provider is ready with no env var, and the wizard and status say so;
 * - agents are refused; expired sessions refresh; a dead refresh token is a clear error.
 */
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { credentialFilePath } from '../../src/providers/credential-store';
import {
  chatgptAccess,
  chatgptSettings,
  readSession,
  sessionCachePath,
} from '../../src/providers/oauth/chatgpt';
import { copilotAccess, copilotSettings } from '../../src/providers/oauth/copilot';
import { hyperAccess, hyperSettings } from '../../src/providers/oauth/hyper';
import { invokeTool } from '../../src/tools/core/call-tool';
import { makeTestApp } from '../helpers/make-test-app';
import { svc, urlIn } from './helpers/cli';
import { browse, fakeOAuth, jwt } from './helpers/fake-oauth';

async function setup(
  extra: Record<string, Record<string, string>> = {},
  options: { pendingPolls?: number } = {},
) {
  const oauth = await fakeOAuth(options);
  const app = await makeTestApp({ config: { auth: oauth.authConfig(extra) } });
  return { oauth, app };
}

function providerRow(app: Awaited<ReturnType<typeof makeTestApp>>, id: string) {
  return (
    invokeTool(app, 'get_provider_status', { provider: id }, { surface: 'agent' }) as Promise<any>
  ).then((s) => s.providers[0]);
}

describe('svc auth copilot', () => {
  it('AUTH-31: reuses a GitHub token found on disk, with no device flow', async () => {
    const { oauth, app } = await setup();
    const dir = join(app.env.HOME!, '.config', 'github-copilot');
    mkdirSync(dir, { recursive: true });
    writeFileSync(
      join(dir, 'apps.json'),
      JSON.stringify({
        'github.com:Iv1.b507a08c87ecfe98': { user: 'octo', oauth_token: 'gho_diskToken000000000000000000' },
      }),
    );
    const result = await svc(app, ['auth', 'copilot', '--json']);
    expect(result.code, result.stderr).toBe(0);
    expect(result.json).toMatchObject({ platform: 'copilot', method: 'reused_disk_token' });
    expect(oauth.requests.some((r) => r.path === '/login/device/code')).toBe(false);
    expect(result.stderr).toContain('no device flow needed');
    const row = await providerRow(app, 'copilot');
    expect(row).toMatchObject({ ready: true, credential_source_kind: 'oauth' });
  });

  it('AUTH-32 / CLI-01: without a token on disk, runs the device flow and shows the user code', async () => {
    const { oauth, app } = await setup({}, { pendingPolls: 2 });
    const result = await svc(app, ['auth', 'copilot', '--json']);
    expect(result.code, result.stderr).toBe(0);
    expect(result.json).toMatchObject({ platform: 'copilot', method: 'device_flow' });
    expect(result.stderr).toContain('WDJB-MJHT');
    expect(oauth.requests.filter((r) => r.path === '/login/oauth/access_token')).toHaveLength(3);
    // AUTH-04: stored by svc; the provider is ready with no env var.
    const stored = app.providers.store.get('copilot');
    expect(stored).toMatchObject({ kind: 'oauth', refresh: 'gho_deviceFlowToken00000000000' });
    expect((await providerRow(app, 'copilot')).ready).toBe(true);
  });

  it('refreshes an expired Copilot token from the stored GitHub token', async () => {
    const { oauth, app } = await setup();
    app.providers.store.set('copilot', {
      kind: 'oauth',
      refresh: 'gho_diskToken000000000000000000',
      access: 'old',
      expires_at: 0,
      stored_by: 'test',
      stored_at: 'x',
    });
    const token = await copilotAccess({
      store: app.providers.store,
      settings: copilotSettings(app.config.auth),
      fetch,
      now: () => Date.now(),
    });
    expect(token).toMatch(/^tid=copilot-\d+/);
    expect(app.providers.store.get('copilot')?.access).toBe(token);
    expect(oauth.state.copilotIssued).toBe(1);
  });
});

describe('svc auth hyper', () => {
  it('AUTH-33: device auth with a verification code, then the token exchange; tokens stored', async () => {
    const { oauth, app } = await setup();
    const result = await svc(app, ['auth', 'hyper', '--json']);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stderr).toContain('HYPR-4242');
    expect(oauth.requests.map((r) => r.path)).toEqual([
      '/device/auth',
      '/device/auth/hyper-device',
      '/device/auth/hyper-device',
      '/token/exchange',
    ]);
    expect(app.providers.store.get('hyper')).toMatchObject({
      kind: 'oauth',
      access: 'hyper-access-0001',
      refresh: 'hyper-refresh-0002',
    });
    expect((await providerRow(app, 'hyper')).ready).toBe(true);
  });
});

describe('expired hyper tokens', () => {
  it('an expired access token is exchanged again; a rejected refresh token says to sign in again', async () => {
    const { app } = await setup();
    const settings = hyperSettings(app.config.auth);
    const base = { kind: 'oauth' as const, access: 'old', expires_at: 0, stored_by: 'test', stored_at: 'x' };
    app.providers.store.set('hyper', { ...base, refresh: 'hyper-refresh-0001' });
    expect(await hyperAccess({ store: app.providers.store, settings, fetch, now: () => Date.now() })).toBe(
      'hyper-access-0001',
    );
    expect(app.providers.store.get('hyper')?.refresh).toBe('hyper-refresh-0002');
    app.providers.store.set('hyper', { ...base, refresh: 'revoked-token' });
    await expect(
      hyperAccess({ store: app.providers.store, settings, fetch, now: () => Date.now() }),
    ).rejects.toMatchObject({
      code: 'unauthorized',
      message: expect.stringContaining('run svc auth hyper'),
    });
  });
});

describe('svc auth openrouter', () => {
  it('AUTH-34 / AUTH-04 / AUTH-06: browser PKCE with a loopback callback; the API key is stored, the provider is ready and the wizard shows it', async () => {
    const { oauth, app } = await setup();
    const visits: Promise<{ status: number; text: string }>[] = [];
    const result = await svc(app, ['auth', 'openrouter', '--json'], {
      onStderrLine: (line) => {
        const url = urlIn(line);
        if (url?.startsWith(oauth.url)) visits.push(browse(url));
      },
    });
    expect(result.code, result.stderr).toBe(0);
    expect(visits).toHaveLength(1);
    expect((await visits[0]).text).toContain('Signed in');
    const authorize = oauth.requests.find((r) => r.path.startsWith('/auth?'))!;
    const params = new URL(authorize.path, 'http://x').searchParams;
    expect(params.get('code_challenge_method')).toBe('S256');
    expect(params.get('callback_url')).toMatch(/^http:\/\/localhost:\d+\/callback$/);
    expect(app.providers.store.get('openrouter')).toMatchObject({
      kind: 'api_key',
      value: oauth.state.openrouterKey,
    });
    // AUTH-04: ready with no env var; AUTH-06: the wizard shows the signed-in state.
    expect(await providerRow(app, 'openrouter')).toMatchObject({
      ready: true,
      credential_source_kind: 'credential_store',
    });
    const wizard = (await invokeTool(
      app,
      'get_provider_auth_wizard',
      { provider: 'openrouter' },
      { surface: 'agent' },
    )) as any;
    expect(wizard.platforms[0]).toMatchObject({
      platform: 'openrouter',
      status: 'signed_in',
      command: 'svc auth openrouter',
    });
  });
});

describe('svc auth chatgpt', () => {
  function vendorFile(app: { env: Record<string, string | undefined> }) {
    const dir = join(app.env.HOME!, '.codex');
    mkdirSync(dir, { recursive: true });
    const file = join(dir, 'auth.json');
    writeFileSync(
      file,
      JSON.stringify({
        OPENAI_API_KEY: null,
        tokens: {
          id_token: jwt({}),
          access_token: jwt({ exp: 1 }),
          refresh_token: 'rt-vendor-0001',
          account_id: 'acct-vendor',
        },
        last_refresh: '2025-01-01T00:00:00Z',
      }),
    );
    return file;
  }

  it('AUTH-35 / AUTH-38 / AUTH-39: inherits the Codex CLI session, refreshes it, caches the rotated token in the data dir, never writes the vendor file', async () => {
    const { oauth, app } = await setup();
    const file = vendorFile(app);
    const before = {
      hash: createHash('sha256').update(readFileSync(file)).digest('hex'),
      mtime: statSync(file).mtimeMs,
    };
    const result = await svc(app, ['auth', 'chatgpt', '--json']);
    expect(result.code, result.stderr).toBe(0);
    expect(result.json).toMatchObject({ platform: 'chatgpt', method: 'inherited_vendor_session' });
    expect(oauth.requests.some((r) => r.path.startsWith('/oauth/authorize'))).toBe(false);
    const cache = sessionCachePath(app.dataDir);
    expect(cache.startsWith(app.dataDir)).toBe(true);
    expect(statSync(cache).mode & 0o777).toBe(0o600);
    expect(readSession(app.dataDir)).toMatchObject({
      refresh_token: 'rt-rotated-0001',
      account_id: 'acct-fake-1',
    });
    expect(createHash('sha256').update(readFileSync(file)).digest('hex')).toBe(before.hash);
    expect(statSync(file).mtimeMs).toBe(before.mtime);
  });

  it('AUTH-36: without a vendor session, runs browser PKCE (state and verifier checked)', async () => {
    const { oauth, app } = await setup();
    const visits: Promise<{ status: number; text: string }>[] = [];
    const result = await svc(app, ['auth', 'chatgpt', '--json'], {
      onStderrLine: (line) => {
        const url = urlIn(line);
        if (url?.startsWith(oauth.url)) visits.push(browse(url));
      },
    });
    expect(result.code, result.stderr).toBe(0);
    expect(result.json).toMatchObject({ method: 'browser_pkce' });
    expect((await visits[0]).status).toBe(200);
    expect(readSession(app.dataDir)).toMatchObject({ refresh_token: 'rt-browser-0001', origin: 'browser' });
  });

  it('AUTH-37: svc auth summary reports a session, not an API key', async () => {
    const { app } = await setup();
    vendorFile(app);
    expect((await svc(app, ['auth', 'chatgpt'])).code).toBe(0);
    writeFileSync(
      join(app.workspace, 'svc.toml'),
      `${readFileSync(join(app.workspace, 'svc.toml'), 'utf8')}\n[models]\nlarge = "chatgpt/gpt-5-codex"\n`,
    );
    const summary = await svc(app, ['auth', 'summary', '--json']);
    expect(summary.code, summary.stderr).toBe(0);
    expect(summary.json.credential.mode).toBe('chatgpt_session');
    expect(summary.json.credential.mode).not.toContain('api_key');
    expect(summary.json.credential.last4).toMatch(/^….{4}$/);
  });

  it('an expired session refreshes (rotating again); a dead refresh token says to sign in again', async () => {
    const { oauth, app } = await setup();
    vendorFile(app);
    await svc(app, ['auth', 'chatgpt']);
    const path = sessionCachePath(app.dataDir);
    const session = JSON.parse(readFileSync(path, 'utf8'));
    writeFileSync(path, JSON.stringify({ ...session, expires_at: 0 }));
    const settings = chatgptSettings(app.config.auth);
    const next = await chatgptAccess({ dataDir: app.dataDir, settings, fetch, now: () => Date.now() });
    expect(next.refresh_token).toBe('rt-rotated-0002');
    oauth.state.refreshTokens.clear();
    writeFileSync(path, JSON.stringify({ ...next, expires_at: 0 }));
    await expect(
      chatgptAccess({ dataDir: app.dataDir, settings, fetch, now: () => Date.now() }),
    ).rejects.toMatchObject({
      code: 'unauthorized',
      message: expect.stringContaining('run svc auth chatgpt'),
    });
  });
});

describe('OAuth is human-only', () => {
  it('AUTH-29: refuses when run from an agent shell, and no tool starts a flow', async () => {
    const { oauth, app } = await setup();
    const result = await svc(app, ['auth', 'copilot'], { env: { AGENT: 'svc' } });
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('human-only');
    expect(oauth.requests).toHaveLength(0);
    const names = app.tools.registered().map((t) => t.name);
    expect(names.filter((n) => /oauth|login|sign_?in/i.test(n))).toEqual([]);
  });

  it('AUTH-30: get_provider_auth_wizard names the svc auth command for the selected provider', async () => {
    const { app } = await setup();
    writeFileSync(join(app.workspace, 'svc.toml'), '[models]\nlarge = "copilot/gpt-4.1"\n');
    app.reloadConfig();
    const wizard = (await invokeTool(app, 'get_provider_auth_wizard', {}, { surface: 'agent' })) as any;
    expect(wizard.human_only).toBe(true);
    expect(wizard.next).toMatchObject({ platform: 'copilot', command: 'svc auth copilot' });
    expect(wizard.next.why).toContain('copilot/gpt-4.1');
    expect(existsSync(credentialFilePath(app.env))).toBe(false);
  });
});
