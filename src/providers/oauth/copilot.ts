/**
 * GitHub Copilot (the code-hosting assistant platform): reuse a GitHub OAuth token found on disk
 * (svc's own store, then the Copilot editor plugins' `apps.json` / `hosts.json`), else run the
 * GitHub device flow. The GitHub token is the long-lived "refresh" credential; it is exchanged for
 * a short-lived Copilot API token whenever that expires.
 * @module
 */
import { existsSync, readFileSync } from 'node:fs';
import { SvcError } from '../../errors';
import { VERSION } from '../../version';
import { type Env, expandHome } from '../context';
import type { CredentialStore, StoredCredential } from '../credential-store';
import { type AuthIo, failure, pollDevice, requestJson, settings } from './common';

export const COPILOT_DEFAULTS = {
  client_id: 'Iv1.b507a08c87ecfe98',
  device_code_url: 'https://github.com/login/device/code',
  access_token_url: 'https://github.com/login/oauth/access_token',
  copilot_token_url: 'https://api.github.com/copilot_internal/v2/token',
  /** Comma-separated token files of the Copilot editor plugins (read only, never written). */
  token_files: '~/.config/github-copilot/apps.json,~/.config/github-copilot/hosts.json',
  scope: 'read:user',
};
export type CopilotSettings = typeof COPILOT_DEFAULTS;

export const COPILOT_HEADERS = {
  'editor-version': `svc/${VERSION}`,
  'editor-plugin-version': `svc/${VERSION}`,
  'copilot-integration-id': 'vscode-chat',
  'user-agent': `svc/${VERSION}`,
};

export interface LoginResult {
  platform: string;
  provider: string;
  method: string;
  detail: string;
  expires_at?: string;
}

export function copilotSettings(auth: Record<string, Record<string, string>>): CopilotSettings {
  return settings(COPILOT_DEFAULTS, auth.copilot);
}

/** A GitHub OAuth token left by a Copilot editor plugin (read only). */
export function copilotTokenOnDisk(
  env: Env,
  s: CopilotSettings,
): { file: string; token: string } | undefined {
  for (const raw of s.token_files
    .split(',')
    .map((f) => f.trim())
    .filter(Boolean)) {
    const file = expandHome(raw, env);
    if (!existsSync(file)) continue;
    try {
      const content = JSON.parse(readFileSync(file, 'utf8')) as Record<string, { oauth_token?: string }>;
      const entry =
        content[`github.com:${s.client_id}`] ??
        content['github.com'] ??
        Object.entries(content).find(([k]) => k.startsWith('github.com'))?.[1];
      if (entry?.oauth_token) return { file, token: entry.oauth_token };
    } catch {
      // An unreadable plugin file is not ours to fix; fall through to the device flow.
    }
  }
  return undefined;
}

async function exchange(
  fetchFn: typeof fetch,
  s: CopilotSettings,
  githubToken: string,
  signal?: AbortSignal,
): Promise<{ token: string; expires_at: number }> {
  const { status, body } = await requestJson(fetchFn, 'copilot token exchange', s.copilot_token_url, {
    headers: { authorization: `token ${githubToken}`, ...COPILOT_HEADERS },
    signal,
  });
  if (status === 401)
    throw new SvcError(
      'unauthorized',
      'copilot: the GitHub token was rejected (401); run svc auth copilot --force',
    );
  if (status === 403)
    throw new SvcError('forbidden', 'copilot: this GitHub account has no Copilot subscription (403)');
  if (status !== 200 || typeof body.token !== 'string') throw failure('copilot token exchange', status, body);
  const expires = typeof body.expires_at === 'number' ? body.expires_at * 1000 : Date.now() + 25 * 60_000;
  return { token: body.token, expires_at: expires };
}

export async function loginCopilot(options: {
  store: CredentialStore;
  env: Env;
  settings: CopilotSettings;
  fetch: typeof fetch;
  io: AuthIo;
  force?: boolean;
  now: () => number;
}): Promise<LoginResult> {
  const { store, settings: s, io } = options;
  const save = (githubToken: string, copilot: { token: string; expires_at: number }, method: string) => {
    const credential: StoredCredential = {
      kind: 'oauth',
      refresh: githubToken,
      access: copilot.token,
      expires_at: copilot.expires_at,
      stored_by: `svc auth copilot (${method})`,
      stored_at: new Date(options.now()).toISOString(),
    };
    store.set('copilot', credential);
  };
  if (!options.force) {
    const existing = store.get('copilot');
    if (existing?.refresh) {
      try {
        const copilot = await exchange(options.fetch, s, existing.refresh, io.signal);
        save(existing.refresh, copilot, 'reused stored token');
        io.print('Reused the GitHub token svc already stored; Copilot token refreshed.');
        return result('reused_stored_token', 'svc credential store', copilot.expires_at);
      } catch (error) {
        if (!SvcError.is(error) || error.code !== 'unauthorized') throw error;
      }
    }
    const disk = copilotTokenOnDisk(options.env, s);
    if (disk) {
      const copilot = await exchange(options.fetch, s, disk.token, io.signal);
      save(disk.token, copilot, 'reused token from disk');
      io.print(`Reused the GitHub token found in ${disk.file} (read only); no device flow needed.`);
      return result('reused_disk_token', disk.file, copilot.expires_at);
    }
  }
  const code = await requestJson(options.fetch, 'github device code', s.device_code_url, {
    form: { client_id: s.client_id, scope: s.scope },
    signal: io.signal,
  });
  if (code.status !== 200 || typeof code.body.device_code !== 'string')
    throw failure('github device code', code.status, code.body);
  const verification = String(
    code.body.verification_uri ?? code.body.verification_url ?? 'https://github.com/login/device',
  );
  io.print(`First copy your one-time code: ${String(code.body.user_code)}`);
  io.print(`Then open ${verification} and enter it to authorize svc for GitHub Copilot.`);
  io.openUrl?.(verification);
  io.print('Waiting for authorization…');
  const githubToken = await pollDevice<string>({
    intervalMs: Number(code.body.interval ?? 5) * 1000,
    expiresInMs: Number(code.body.expires_in ?? 900) * 1000,
    signal: io.signal,
    poll: async () => {
      const r = await requestJson(options.fetch, 'github device token', s.access_token_url, {
        form: {
          client_id: s.client_id,
          device_code: String(code.body.device_code),
          grant_type: 'urn:ietf:params:oauth:grant-type:device_code',
        },
        signal: io.signal,
      });
      if (typeof r.body.access_token === 'string' && r.body.access_token)
        return { done: r.body.access_token };
      if (r.body.error === 'authorization_pending') return { pending: true };
      if (r.body.error === 'slow_down') return { pending: true, slowDown: true };
      throw failure('github device authorization', r.status, r.body);
    },
  });
  const copilot = await exchange(options.fetch, s, githubToken, io.signal);
  save(githubToken, copilot, 'device flow');
  io.print('Authorized. svc stored the GitHub token and a Copilot token in its credential store.');
  return result('device_flow', verification, copilot.expires_at);

  function result(method: string, detail: string, expires: number): LoginResult {
    return {
      platform: 'copilot',
      provider: 'copilot',
      method,
      detail,
      expires_at: new Date(expires).toISOString(),
    };
  }
}

/** A valid Copilot API token, exchanged again (and stored) when the current one has expired. */
export async function copilotAccess(options: {
  store: CredentialStore;
  settings: CopilotSettings;
  fetch: typeof fetch;
  now: () => number;
  signal?: AbortSignal;
}): Promise<string> {
  const stored = options.store.get('copilot');
  if (!stored?.refresh) throw new SvcError('unauthorized', 'copilot: not signed in; run svc auth copilot');
  if (stored.access && (stored.expires_at ?? 0) - 60_000 > options.now()) return stored.access;
  const copilot = await exchange(options.fetch, options.settings, stored.refresh, options.signal);
  options.store.set('copilot', { ...stored, access: copilot.token, expires_at: copilot.expires_at });
  return copilot.token;
}
