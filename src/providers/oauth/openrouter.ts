/**
 * OpenRouter (the aggregator platform): browser PKCE with a loopback callback; the authorization
 * code is exchanged for an API key, which svc stores (the provider then needs no env var).
 * @module
 */
import type { CredentialStore } from '../credential-store';
import { type AuthIo, failure, pkce, requestJson, settings, startCallback } from './common';
import type { LoginResult } from './copilot';

export const OPENROUTER_DEFAULTS = {
  auth_url: 'https://openrouter.ai/auth',
  keys_url: 'https://openrouter.ai/api/v1/auth/keys',
  /** 0 picks a free port; OpenRouter accepts any localhost callback. */
  callback_port: '0',
  callback_host: 'localhost',
  timeout_ms: '300000',
};
export type OpenRouterSettings = typeof OPENROUTER_DEFAULTS;

export function openrouterSettings(auth: Record<string, Record<string, string>>): OpenRouterSettings {
  return settings(OPENROUTER_DEFAULTS, auth.openrouter);
}

export async function loginOpenRouter(options: {
  store: CredentialStore;
  settings: OpenRouterSettings;
  fetch: typeof fetch;
  io: AuthIo;
  now: () => number;
}): Promise<LoginResult> {
  const { settings: s, io } = options;
  const challenge = pkce();
  const callback = await startCallback({
    port: Number(s.callback_port),
    host: s.callback_host,
    path: '/callback',
    timeoutMs: Number(s.timeout_ms),
    signal: io.signal,
  });
  try {
    const url = new URL(s.auth_url);
    url.searchParams.set('callback_url', callback.redirectUri);
    url.searchParams.set('code_challenge', challenge.challenge);
    url.searchParams.set('code_challenge_method', 'S256');
    io.print('Open this URL in your browser to authorize svc with OpenRouter:');
    io.print(url.toString());
    io.openUrl?.(url.toString());
    io.print('Waiting for the browser callback…');
    const params = await callback.result;
    const { status, body } = await requestJson(options.fetch, 'openrouter key exchange', s.keys_url, {
      json: { code: params.get('code'), code_verifier: challenge.verifier, code_challenge_method: 'S256' },
      signal: io.signal,
    });
    if (status !== 200 || typeof body.key !== 'string' || !body.key)
      throw failure('openrouter key exchange', status, body);
    options.store.set('openrouter', {
      kind: 'api_key',
      value: body.key,
      stored_by: 'svc auth openrouter (browser PKCE)',
      stored_at: new Date(options.now()).toISOString(),
    });
    io.print('Authorized. svc stored the OpenRouter API key in its credential store.');
    return {
      platform: 'openrouter',
      provider: 'openrouter',
      method: 'browser_pkce',
      detail: callback.redirectUri,
    };
  } finally {
    callback.close();
  }
}
