/**
 * ChatGPT (the chat-assistant backend platform). The credential is a ChatGPT session for the
 * Codex backend, not an API key. `svc auth chatgpt` first inherits the Codex CLI's session file
 * (`$CODEX_HOME/auth.json`, default `~/.codex/auth.json`) and refreshes it; otherwise it runs a
 * browser PKCE flow. The session, with its rotated refresh tokens, is cached in svc's own data
 * dir (`<data dir>/auth/chatgpt-session.json`, mode 0600). The vendor file is only ever read.
 * @module
 */
import { chmodSync, existsSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { SvcError } from '../../errors';
import { makeDirs } from '../../util/make-dirs';
import { type Env, expandHome, homeOf } from '../context';
import { type AuthIo, failure, jwtClaims, pkce, requestJson, settings, startCallback } from './common';
import type { LoginResult } from './copilot';

export const CHATGPT_DEFAULTS = {
  issuer: 'https://auth.openai.com',
  client_id: 'app_EMoamEEZ73f0CkXaXp7hrann',
  /** The registered redirect is http://localhost:1455/auth/callback. */
  callback_port: '1455',
  callback_host: 'localhost',
  scope: 'openid profile email offline_access',
  vendor_session_file: '',
  timeout_ms: '300000',
};
export type ChatGptSettings = typeof CHATGPT_DEFAULTS;

export interface ChatGptSession {
  access_token: string;
  refresh_token: string;
  id_token?: string;
  account_id?: string;
  /** Epoch ms. */
  expires_at: number;
  /** Where the session came from: `inherited <file>` or `browser`. */
  origin: string;
  last_refresh: string;
}

export function chatgptSettings(auth: Record<string, Record<string, string>>): ChatGptSettings {
  return settings(CHATGPT_DEFAULTS, auth.chatgpt);
}

export function vendorSessionFile(env: Env, s: ChatGptSettings): string {
  if (s.vendor_session_file) return expandHome(s.vendor_session_file, env);
  return join(env.CODEX_HOME ? expandHome(env.CODEX_HOME, env) : join(homeOf(env), '.codex'), 'auth.json');
}

export function sessionCachePath(dataDir: string): string {
  return join(dataDir, 'auth', 'chatgpt-session.json');
}

export function readSession(dataDir: string): ChatGptSession | undefined {
  const path = sessionCachePath(dataDir);
  if (!existsSync(path)) return undefined;
  try {
    const value = JSON.parse(readFileSync(path, 'utf8')) as ChatGptSession;
    return value?.access_token && value.refresh_token ? value : undefined;
  } catch {
    return undefined;
  }
}

function writeSession(dataDir: string, session: ChatGptSession): void {
  const path = sessionCachePath(dataDir);
  makeDirs(dirname(path), 0o700);
  const tmp = `${path}.${process.pid}.tmp`;
  writeFileSync(tmp, `${JSON.stringify(session, null, 2)}\n`, { mode: 0o600 });
  chmodSync(tmp, 0o600);
  renameSync(tmp, path);
}

function expiryOf(accessToken: string, expiresIn: unknown, now: number): number {
  const exp = jwtClaims(accessToken).exp;
  if (typeof exp === 'number') return exp * 1000;
  return now + Number(expiresIn ?? 3600) * 1000;
}

function accountOf(idToken: string | undefined, fallback?: string): string | undefined {
  const auth = jwtClaims(idToken)['https://api.openai.com/auth'] as Record<string, unknown> | undefined;
  return typeof auth?.chatgpt_account_id === 'string' ? auth.chatgpt_account_id : fallback;
}

async function refresh(
  fetchFn: typeof fetch,
  s: ChatGptSettings,
  session: Pick<ChatGptSession, 'refresh_token' | 'id_token' | 'account_id'>,
  now: number,
  origin: string,
  signal?: AbortSignal,
): Promise<ChatGptSession> {
  const { status, body } = await requestJson(
    fetchFn,
    'chatgpt session refresh',
    `${s.issuer.replace(/\/+$/, '')}/oauth/token`,
    {
      json: {
        client_id: s.client_id,
        grant_type: 'refresh_token',
        refresh_token: session.refresh_token,
        scope: 'openid profile email',
      },
      signal,
    },
  );
  if (status === 400 || status === 401 || status === 403)
    throw new SvcError(
      'unauthorized',
      `chatgpt: the session expired and could not be refreshed (${status}); run svc auth chatgpt`,
    );
  if (status !== 200 || typeof body.access_token !== 'string')
    throw failure('chatgpt session refresh', status, body);
  const idToken = typeof body.id_token === 'string' ? body.id_token : session.id_token;
  return {
    access_token: body.access_token,
    // Refresh tokens rotate: keep the new one (in svc's file; the vendor file is never written).
    refresh_token:
      typeof body.refresh_token === 'string' && body.refresh_token
        ? body.refresh_token
        : session.refresh_token,
    id_token: idToken,
    account_id: accountOf(idToken, session.account_id),
    expires_at: expiryOf(body.access_token, body.expires_in, now),
    origin,
    last_refresh: new Date(now).toISOString(),
  };
}

export async function loginChatGpt(options: {
  dataDir: string;
  env: Env;
  settings: ChatGptSettings;
  fetch: typeof fetch;
  io: AuthIo;
  now: () => number;
  force?: boolean;
}): Promise<LoginResult> {
  const { settings: s, io } = options;
  const vendorFile = vendorSessionFile(options.env, s);
  if (!options.force && existsSync(vendorFile)) {
    let tokens: { refresh_token?: string; id_token?: string; account_id?: string } | undefined;
    try {
      tokens = (JSON.parse(readFileSync(vendorFile, 'utf8')) as { tokens?: typeof tokens }).tokens;
    } catch {
      tokens = undefined;
    }
    if (tokens?.refresh_token) {
      const session = await refresh(
        options.fetch,
        s,
        { refresh_token: tokens.refresh_token, id_token: tokens.id_token, account_id: tokens.account_id },
        options.now(),
        `inherited ${vendorFile}`,
        io.signal,
      );
      writeSession(options.dataDir, session);
      io.print(`Inherited the ChatGPT session from ${vendorFile} (read only) and refreshed it.`);
      io.print(`svc keeps its own copy in ${sessionCachePath(options.dataDir)}.`);
      return done('inherited_vendor_session', vendorFile, session);
    }
    io.print(`${vendorFile} has no refresh token; starting a browser sign-in instead.`);
  }
  const challenge = pkce();
  const callback = await startCallback({
    port: Number(s.callback_port),
    host: s.callback_host,
    path: '/auth/callback',
    timeoutMs: Number(s.timeout_ms),
    signal: io.signal,
    expectState: challenge.state,
  });
  try {
    const url = new URL(`${s.issuer.replace(/\/+$/, '')}/oauth/authorize`);
    url.search = new URLSearchParams({
      response_type: 'code',
      client_id: s.client_id,
      redirect_uri: callback.redirectUri,
      scope: s.scope,
      code_challenge: challenge.challenge,
      code_challenge_method: 'S256',
      id_token_add_organizations: 'true',
      codex_cli_simplified_flow: 'true',
      state: challenge.state,
    }).toString();
    io.print('Open this URL in your browser to sign in to ChatGPT:');
    io.print(url.toString());
    io.openUrl?.(url.toString());
    io.print('Waiting for the browser callback…');
    const params = await callback.result;
    const { status, body } = await requestJson(
      options.fetch,
      'chatgpt token exchange',
      `${s.issuer.replace(/\/+$/, '')}/oauth/token`,
      {
        form: {
          grant_type: 'authorization_code',
          code: params.get('code') ?? '',
          redirect_uri: callback.redirectUri,
          client_id: s.client_id,
          code_verifier: challenge.verifier,
        },
        signal: io.signal,
      },
    );
    if (status !== 200 || typeof body.access_token !== 'string' || typeof body.refresh_token !== 'string')
      throw failure('chatgpt token exchange', status, body);
    const now = options.now();
    const idToken = typeof body.id_token === 'string' ? body.id_token : undefined;
    const session: ChatGptSession = {
      access_token: body.access_token,
      refresh_token: body.refresh_token,
      id_token: idToken,
      account_id: accountOf(idToken),
      expires_at: expiryOf(body.access_token, body.expires_in, now),
      origin: 'browser',
      last_refresh: new Date(now).toISOString(),
    };
    writeSession(options.dataDir, session);
    io.print(`Signed in. svc stored the ChatGPT session in ${sessionCachePath(options.dataDir)}.`);
    return done('browser_pkce', callback.redirectUri, session);
  } finally {
    callback.close();
  }

  function done(method: string, detail: string, session: ChatGptSession): LoginResult {
    return {
      platform: 'chatgpt',
      provider: 'chatgpt',
      method,
      detail,
      expires_at: new Date(session.expires_at).toISOString(),
    };
  }
}

/** A valid session, refreshed (and the rotated refresh token cached) when the access token expired. */
export async function chatgptAccess(options: {
  dataDir: string;
  settings: ChatGptSettings;
  fetch: typeof fetch;
  now: () => number;
  signal?: AbortSignal;
}): Promise<ChatGptSession> {
  const session = readSession(options.dataDir);
  if (!session) throw new SvcError('unauthorized', 'chatgpt: not signed in; run svc auth chatgpt');
  if (session.expires_at - 60_000 > options.now()) return session;
  const next = await refresh(
    options.fetch,
    options.settings,
    session,
    options.now(),
    session.origin,
    options.signal,
  );
  writeSession(options.dataDir, next);
  return next;
}
