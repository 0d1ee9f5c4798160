/**
 * Charm Hyper (the hyper-gateway platform): device authorization with a verification code, then
 * the refresh token is exchanged for an access token (and exchanged again when it expires).
 * @module
 */
import { hostname } from 'node:os';
import { SvcError } from '../../errors';
import type { CredentialStore } from '../credential-store';
import { type AuthIo, failure, pollDevice, requestJson, settings } from './common';
import type { LoginResult } from './copilot';

export const HYPER_DEFAULTS = {
  device_auth_url: 'https://hyper.charm.land/device/auth',
  /** The device code is appended: `<device_poll_url>/<device_code>`. */
  device_poll_url: 'https://hyper.charm.land/device/auth',
  token_exchange_url: 'https://hyper.charm.land/token/exchange',
  poll_interval_ms: '5000',
};
export type HyperSettings = typeof HYPER_DEFAULTS;

export function hyperSettings(auth: Record<string, Record<string, string>>): HyperSettings {
  return settings(HYPER_DEFAULTS, auth.hyper);
}

async function exchange(fetchFn: typeof fetch, s: HyperSettings, refresh: string, signal?: AbortSignal) {
  const { status, body } = await requestJson(fetchFn, 'hyper token exchange', s.token_exchange_url, {
    json: { refresh_token: refresh },
    signal,
  });
  if (status === 401 || status === 403)
    throw new SvcError(
      'unauthorized',
      `hyper: the refresh token was rejected (${status}); run svc auth hyper`,
    );
  if (status !== 200 || typeof body.access_token !== 'string')
    throw failure('hyper token exchange', status, body);
  return {
    access: body.access_token,
    refresh: typeof body.refresh_token === 'string' && body.refresh_token ? body.refresh_token : refresh,
    expires_at: Date.now() + Number(body.expires_in ?? 3600) * 1000,
  };
}

export async function loginHyper(options: {
  store: CredentialStore;
  settings: HyperSettings;
  fetch: typeof fetch;
  io: AuthIo;
  now: () => number;
}): Promise<LoginResult> {
  const { settings: s, io } = options;
  const start = await requestJson(options.fetch, 'hyper device authorization', s.device_auth_url, {
    json: { device_name: `svc (${hostname()})` },
    signal: io.signal,
  });
  if (start.status !== 200 || typeof start.body.device_code !== 'string')
    throw failure('hyper device authorization', start.status, start.body);
  const verification = String(start.body.verification_url ?? start.body.verification_uri ?? '');
  io.print(`Verification code: ${String(start.body.user_code)}`);
  io.print(`Open ${verification} and confirm the code to authorize svc for Hyper.`);
  if (verification) io.openUrl?.(verification);
  io.print('Waiting for authorization…');
  const refresh = await pollDevice<string>({
    intervalMs: Number(start.body.interval ? Number(start.body.interval) * 1000 : s.poll_interval_ms),
    expiresInMs: Number(start.body.expires_in ?? 900) * 1000,
    signal: io.signal,
    poll: async () => {
      const r = await requestJson(
        options.fetch,
        'hyper device token',
        `${s.device_poll_url.replace(/\/+$/, '')}/${encodeURIComponent(String(start.body.device_code))}`,
        { signal: io.signal },
      );
      if (typeof r.body.refresh_token === 'string' && r.body.refresh_token)
        return { done: r.body.refresh_token };
      if (r.body.error === 'authorization_pending' || r.status === 202) return { pending: true };
      if (r.body.error === 'slow_down') return { pending: true, slowDown: true };
      throw failure('hyper device authorization', r.status, r.body);
    },
  });
  const token = await exchange(options.fetch, s, refresh, io.signal);
  options.store.set('hyper', {
    kind: 'oauth',
    refresh: token.refresh,
    access: token.access,
    expires_at: token.expires_at,
    stored_by: 'svc auth hyper (device flow)',
    stored_at: new Date(options.now()).toISOString(),
  });
  io.print('Authorized. svc exchanged the refresh token and stored the Hyper tokens.');
  return {
    platform: 'hyper',
    provider: 'hyper',
    method: 'device_flow',
    detail: verification,
    expires_at: new Date(token.expires_at).toISOString(),
  };
}

export async function hyperAccess(options: {
  store: CredentialStore;
  settings: HyperSettings;
  fetch: typeof fetch;
  now: () => number;
  signal?: AbortSignal;
}): Promise<string> {
  const stored = options.store.get('hyper');
  if (!stored?.refresh)
    throw new SvcError('unauthorized', 'hyper: not signed in; run svc auth hyper (or set HYPER_API_KEY)');
  if (stored.access && (stored.expires_at ?? 0) - 60_000 > options.now()) return stored.access;
  const token = await exchange(options.fetch, options.settings, stored.refresh, options.signal);
  options.store.set('hyper', {
    ...stored,
    access: token.access,
    refresh: token.refresh,
    expires_at: token.expires_at,
  });
  return token.access;
}
