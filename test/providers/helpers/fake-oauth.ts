/**
 * A fake authorization server on 127.0.0.1 for every `svc auth` flow: GitHub device flow and the
 * Copilot token exchange, Hyper device auth and token exchange, OpenRouter PKCE key exchange, and
 * the ChatGPT (auth.openai.com-style) authorize/token endpoints with refresh-token rotation. It
 * checks PKCE verifiers and records every request. `browse(url)` plays the user's browser.
 * @module
 */
import { createHash } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { onTestFinished } from 'vitest';

export interface OAuthRequest {
  method: string;
  path: string;
  headers: Record<string, string | string[] | undefined>;
  body: Record<string, string>;
}

export function jwt(claims: Record<string, unknown>): string {
  const enc = (v: unknown) => Buffer.from(JSON.stringify(v)).toString('base64url');
  return `${enc({ alg: 'none', typ: 'JWT' })}.${enc(claims)}.sig`;
}

export async function fakeOAuth(options: { pendingPolls?: number } = {}) {
  const requests: OAuthRequest[] = [];
  const state = {
    githubTokens: new Set<string>(['gho_diskToken000000000000000000']),
    copilotIssued: 0,
    pending: { github: options.pendingPolls ?? 1, hyper: options.pendingPolls ?? 1 },
    challenges: new Map<string, string>(),
    refreshTokens: new Set<string>(['rt-vendor-0001']),
    rotations: 0,
    openrouterKey: 'sk-or-v1-fromoauth0000000000000000',
    now: () => Math.floor(Date.now() / 1000),
  };
  let url = '';
  const server = createServer(async (req, res) => {
    let raw = '';
    for await (const chunk of req) raw += chunk;
    const path = req.url ?? '/';
    const u = new URL(path, 'http://x');
    let body: Record<string, string> = {};
    if (raw) {
      try {
        body = JSON.parse(raw);
      } catch {
        body = Object.fromEntries(new URLSearchParams(raw));
      }
    }
    requests.push({ method: req.method ?? 'GET', path, headers: req.headers, body });
    const json = (status: number, value: unknown) =>
      res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(value));

    // ---- GitHub + Copilot ----
    if (u.pathname === '/login/device/code') {
      return json(200, {
        device_code: 'gh-device-code',
        user_code: 'WDJB-MJHT',
        verification_uri: `${url}/login/device`,
        expires_in: 60,
        interval: 0,
      });
    }
    if (u.pathname === '/login/oauth/access_token') {
      if (body.device_code !== 'gh-device-code') return json(200, { error: 'expired_token' });
      if (state.pending.github-- > 0) return json(200, { error: 'authorization_pending' });
      state.githubTokens.add('gho_deviceFlowToken00000000000');
      return json(200, {
        access_token: 'gho_deviceFlowToken00000000000',
        token_type: 'bearer',
        scope: 'read:user',
      });
    }
    if (u.pathname === '/copilot_internal/v2/token') {
      const token = String(req.headers.authorization ?? '').replace(/^token /, '');
      if (!state.githubTokens.has(token)) return json(401, { message: 'Bad credentials' });
      state.copilotIssued++;
      return json(200, {
        token: `tid=copilot-${state.copilotIssued};exp=1`,
        expires_at: state.now() + 1800,
        refresh_in: 1500,
      });
    }

    // ---- Hyper ----
    if (u.pathname === '/device/auth' && req.method === 'POST') {
      return json(200, {
        device_code: 'hyper-device',
        user_code: 'HYPR-4242',
        verification_url: `${url}/device`,
        expires_in: 60,
      });
    }
    if (u.pathname === '/device/auth/hyper-device') {
      if (state.pending.hyper-- > 0) return json(200, { error: 'authorization_pending' });
      return json(200, { refresh_token: 'hyper-refresh-0001', user_id: 'u1' });
    }
    if (u.pathname === '/token/exchange') {
      if (!String(body.refresh_token).startsWith('hyper-refresh-'))
        return json(401, { error: 'invalid_grant' });
      return json(200, {
        access_token: 'hyper-access-0001',
        refresh_token: 'hyper-refresh-0002',
        expires_in: 3600,
      });
    }

    // ---- OpenRouter ----
    if (u.pathname === '/auth' && req.method === 'GET') {
      state.challenges.set('or-code-1', u.searchParams.get('code_challenge') ?? '');
      const callback = new URL(u.searchParams.get('callback_url') ?? '');
      callback.searchParams.set('code', 'or-code-1');
      return res.writeHead(302, { location: callback.toString() }).end();
    }
    if (u.pathname === '/api/v1/auth/keys') {
      const challenge = state.challenges.get(body.code);
      const computed = createHash('sha256')
        .update(body.code_verifier ?? '')
        .digest('base64url');
      if (!challenge || challenge !== computed) return json(400, { error: 'invalid code_verifier' });
      return json(200, { key: state.openrouterKey, user_id: 'user-1' });
    }

    // ---- ChatGPT (auth.openai.com style) ----
    if (u.pathname === '/oauth/authorize') {
      state.challenges.set('cg-code-1', u.searchParams.get('code_challenge') ?? '');
      const callback = new URL(u.searchParams.get('redirect_uri') ?? '');
      callback.searchParams.set('code', 'cg-code-1');
      callback.searchParams.set('state', u.searchParams.get('state') ?? '');
      return res.writeHead(302, { location: callback.toString() }).end();
    }
    if (u.pathname === '/oauth/token') {
      const idToken = jwt({
        'https://api.openai.com/auth': { chatgpt_account_id: 'acct-fake-1' },
        email: 'user@example.com',
      });
      if (body.grant_type === 'authorization_code') {
        const challenge = state.challenges.get(body.code);
        const computed = createHash('sha256')
          .update(body.code_verifier ?? '')
          .digest('base64url');
        if (!challenge || challenge !== computed) return json(400, { error: 'invalid_grant' });
        state.refreshTokens.add('rt-browser-0001');
        return json(200, {
          access_token: jwt({ exp: state.now() + 3600 }),
          refresh_token: 'rt-browser-0001',
          id_token: idToken,
        });
      }
      if (body.grant_type === 'refresh_token') {
        if (!state.refreshTokens.has(body.refresh_token))
          return json(401, { error: 'invalid_grant', error_description: 'refresh token expired' });
        state.refreshTokens.delete(body.refresh_token);
        const rotated = `rt-rotated-${String(++state.rotations).padStart(4, '0')}`;
        state.refreshTokens.add(rotated);
        return json(200, {
          access_token: jwt({ exp: state.now() + 3600, n: state.rotations }),
          refresh_token: rotated,
          id_token: idToken,
        });
      }
    }
    json(404, { error: `fake oauth: no route ${req.method} ${path}` });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  onTestFinished(
    () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  );
  return {
    url,
    requests,
    state,
    /** `[auth.<platform>]` blocks pointing every flow at this server. */
    authConfig(extra: Record<string, Record<string, string>> = {}) {
      return {
        copilot: {
          device_code_url: `${url}/login/device/code`,
          access_token_url: `${url}/login/oauth/access_token`,
          copilot_token_url: `${url}/copilot_internal/v2/token`,
          ...extra.copilot,
        },
        hyper: {
          device_auth_url: `${url}/device/auth`,
          device_poll_url: `${url}/device/auth`,
          token_exchange_url: `${url}/token/exchange`,
          poll_interval_ms: '5',
          ...extra.hyper,
        },
        openrouter: { auth_url: `${url}/auth`, keys_url: `${url}/api/v1/auth/keys`, ...extra.openrouter },
        chatgpt: { issuer: url, callback_port: '0', ...extra.chatgpt },
      };
    },
  };
}

/** The user's browser: follow redirects to the loopback callback and return its page. */
export async function browse(url: string): Promise<{ status: number; text: string }> {
  const response = await fetch(url, { redirect: 'follow', signal: AbortSignal.timeout(5_000) });
  return { status: response.status, text: await response.text() };
}
