/**
 * `svc mcp auth <id>` against a misbehaving or hostile party (test/helpers/fake-mcp-server.ts).
 * Pins:
 * - the loopback callback takes only a callback carrying the flow's `state`: one arriving early
 *   (while the client registers) or without it, an error callback included, is refused and the
 *   real one still completes the flow;
 * - every endpoint a server's answer names (authorization server, token, registration) must be
 *   https: or loopback http:, and not a link-local or cloud metadata address, in the flow and on a
 *   background refresh; nothing is sent to one that is not;
 * - a token that is refused and cannot be refreshed leaves the server `needs_auth` at once;
 * - a failed OAuth answer shows in one short line: no raw body, no code or verifier, no validator
 *   dump; an OAuth answer over 1 MiB stops the flow.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { App } from '../../src/app';
import { invokeTool } from '../../src/tools/core/call-tool';
import { appCli } from '../helpers/app-cli';
import { approveInBrowser, type FakeMcpHttpOptions, fakeMcpHttpServer } from '../helpers/fake-mcp-server';
import { makeTestApp } from '../helpers/make-test-app';

const cli = appCli;

/** Runs `svc mcp auth secure` and plays the browser once the authorization URL is shown. */
async function authorize(app: App, beforeApproving?: (url: string) => Promise<void>) {
  let approved: Promise<number> | undefined;
  const result = await cli(app, ['mcp', 'auth', 'secure', '--no-browser', '--timeout', '10'], (stderr) => {
    const url = /(http:\/\/127\.0\.0\.1:\d+\/authorize\?\S+)/.exec(stderr)?.[1];
    if (url && !approved)
      approved = (beforeApproving?.(url) ?? Promise.resolve()).then(() => approveInBrowser(url));
  });
  return { ...result, approved: await approved };
}

function freePort(): Promise<number> {
  return new Promise((resolvePromise, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolvePromise(port));
    });
  });
}

async function callback(port: number, query: string): Promise<number> {
  const answer = await fetch(`http://127.0.0.1:${port}/mcp/oauth/callback?${query}`);
  await answer.text();
  return answer.status;
}

const FORGED = [
  'code=ATTACKER-CODE&state=not-the-state',
  'code=ATTACKER-CODE',
  'error=access_denied&state=not-the-state',
  'error=access_denied',
];

describe('MCP client OAuth: the loopback callback', () => {
  it('refuses a callback that arrives while the client registers, and completes with the real one', async () => {
    const port = await freePort();
    const early: number[] = [];
    const secure = await fakeMcpHttpServer({
      oauth: true,
      // A local page sends its callbacks while svc waits on the registration.
      beforeRegister: async () => {
        for (const query of FORGED) early.push(await callback(port, query));
      },
    });
    const app = await makeTestApp({
      config: {
        mcp: { secure: { type: 'http', url: secure.url, auth: 'oauth', oauth: { redirect_port: port } } },
      },
    });
    const result = await authorize(app);
    expect(early).toEqual([400, 400, 400, 400]);
    expect(result.code, result.stderr).toBe(0);
    expect(result.approved).toBe(200);
    expect(secure.codesPosted).toHaveLength(1);
    expect(secure.codesPosted).not.toContain('ATTACKER-CODE');
    expect(secure.oauthLog).toMatchObject({ registrations: 1, codeExchanges: 1 });
  });

  it('refuses a callback without the state while the browser is out, an error callback included', async () => {
    const secure = await fakeMcpHttpServer({ oauth: true });
    const app = await makeTestApp({
      config: { mcp: { secure: { type: 'http', url: secure.url, auth: 'oauth' } } },
    });
    const forged: number[] = [];
    const result = await authorize(app, async (url) => {
      const port = Number(new URL(new URL(url).searchParams.get('redirect_uri')!).port);
      for (const query of FORGED) forged.push(await callback(port, query));
    });
    expect(forged).toEqual([400, 400, 400, 400]);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toBe('mcp.secure: authorized; connected, 1 tool\n');
    expect(secure.codesPosted).not.toContain('ATTACKER-CODE');
  });

  it('an error callback with the state ends the flow', async () => {
    const secure = await fakeMcpHttpServer({ oauth: true });
    const app = await makeTestApp({
      config: { mcp: { secure: { type: 'http', url: secure.url, auth: 'oauth' } } },
    });
    let denied: Promise<number> | undefined;
    const result = await cli(app, ['mcp', 'auth', 'secure', '--no-browser', '--timeout', '10'], (stderr) => {
      const url = /(http:\/\/127\.0\.0\.1:\d+\/authorize\?\S+)/.exec(stderr)?.[1];
      if (!url || denied) return;
      const params = new URL(url).searchParams;
      const port = Number(new URL(params.get('redirect_uri')!).port);
      denied = callback(port, `error=access_denied&state=${params.get('state')}`);
    });
    expect(await denied).toBe(400);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('svc: authorization failed: access_denied\n');
    expect(secure.oauthLog.codeExchanges).toBe(0);
  });
});

/** The app's fetch: requests to 127.0.0.1 go out, any other host is recorded and fails like an unreachable one. */
function loopbackOnlyFetch() {
  const elsewhere: string[] = [];
  const fetchFn: typeof fetch = async (input, init) => {
    const url = new URL(input instanceof Request ? input.url : String(input));
    if (url.hostname === '127.0.0.1') return fetch(input, init);
    elsewhere.push(`${init?.method ?? 'GET'} ${url.href}`);
    throw new TypeError('fetch failed');
  };
  return { fetchFn, elsewhere };
}

/** `svc mcp auth secure` in-process (with the app's fetch), playing the browser; the error message, if any. */
async function authorizeWith(options: FakeMcpHttpOptions) {
  const secure = await fakeMcpHttpServer({ oauth: true, ...options });
  const { fetchFn, elsewhere } = loopbackOnlyFetch();
  const app = await makeTestApp({
    fetch: fetchFn,
    config: { mcp: { secure: { type: 'http', url: secure.url, auth: 'oauth' } } },
  });
  let approved: Promise<number> | undefined;
  const error = await app.mcpClients
    .authorize('secure', {
      signal: AbortSignal.timeout(10_000),
      onAuthorizationUrl: (url) => {
        approved = approveInBrowser(url.href);
      },
    })
    .then(
      () => undefined,
      (e: Error) => e.message,
    );
  await approved;
  return { error, secure, elsewhere, app };
}

describe('MCP client OAuth: endpoints named by a server', () => {
  it.each([
    [
      'a plain-http token endpoint',
      { metadata: { token_endpoint: 'http://auth.example.com/token' } },
      'names the endpoint http://auth.example.com/token; svc sends OAuth requests only to https: URLs (or http: on a loopback host)',
    ],
    [
      'a link-local token endpoint',
      { metadata: { token_endpoint: 'https://169.254.169.254/token' } },
      'names the endpoint https://169.254.169.254/token, at 169.254.169.254, a link-local or cloud metadata address; svc never sends OAuth requests there',
    ],
    [
      'a cloud-metadata registration endpoint',
      { metadata: { registration_endpoint: 'https://[fd00:ec2::254]/register' } },
      'names the endpoint https://[fd00:ec2::254]/register, at fd00:ec2::254, a link-local or cloud metadata address',
    ],
    [
      'a link-local authorization server',
      { authorizationServers: ['https://169.254.169.254/latest'] },
      'names the endpoint https://169.254.169.254/.well-known/oauth-authorization-server/latest, at 169.254.169.254',
    ],
    [
      'a plain-http authorization server',
      { authorizationServers: ['http://auth.example.com'] },
      'names the endpoint http://auth.example.com/.well-known/oauth-authorization-server; svc sends OAuth requests only to https: URLs',
    ],
  ])('%s is refused before anything is sent to it', async (_, options, shown) => {
    const { error, secure, elsewhere } = await authorizeWith(options as FakeMcpHttpOptions);
    expect(error).toContain(`mcp.secure: OAuth failed: the OAuth metadata of mcp.secure ${shown}`);
    expect(error).toMatch(/: check the server's OAuth configuration$/);
    expect(elsewhere).toEqual([]);
    expect(secure.codesPosted).toEqual([]);
  });

  it('a background refresh does not post the refresh token to an endpoint svc would refuse', async () => {
    const secure = await fakeMcpHttpServer({ oauth: true });
    const app = await makeTestApp({
      config: { mcp: { secure: { type: 'http', url: secure.url, auth: 'oauth' } } },
    });
    expect((await authorize(app)).code).toBe(0);
    // The stored metadata now names a metadata address as the token endpoint.
    const file = join(app.env.XDG_CONFIG_HOME!, 'svc', 'mcp-auth.json');
    const stored = JSON.parse(readFileSync(file, 'utf8'));
    stored.servers.secure.discovery.authorizationServerMetadata.token_endpoint =
      'http://169.254.169.254/token';
    writeFileSync(file, JSON.stringify(stored));
    secure.revokeAccessTokens();

    const { fetchFn, elsewhere } = loopbackOnlyFetch();
    const later = await makeTestApp({ workspace: app.workspace, env: app.env, fetch: fetchFn });
    later.mcpClients.start();
    await later.mcpClients.settled({ timeoutMs: 15_000 });
    expect(elsewhere).toEqual([]);
    expect(secure.oauthLog.refreshes).toBe(0);
    expect(later.mcpClients.status('secure')[0].state).not.toBe('connected');
  });
});

describe('MCP client OAuth: failed answers', () => {
  it('an answer that is not an OAuth error shows its status only, not its body', async () => {
    const { error } = await authorizeWith({
      tokenError: { status: 403, body: 'resolve_deny: internal-page secret=abc', contentType: 'text/plain' },
    });
    expect(error).toBe(
      'mcp.secure: OAuth failed: the authorization server answered HTTP 403 with something that is not an OAuth error (not shown)',
    );
  });

  it("a server's error description is capped, its codes and secrets masked", async () => {
    const description = `bad request; got body code=the-code&code_verifier=VERIFIER-123&client_id=c\n${'y'.repeat(500)}`;
    const { error } = await authorizeWith({
      tokenError: {
        status: 400,
        body: JSON.stringify({ error: 'invalid_request', error_description: description }),
      },
    });
    expect(error).toMatch(
      /^mcp\.secure: OAuth failed: invalid_request: bad request; got body code=\[REDACTED\]&code_verifier=\[REDACTED\]&client_id=c y+…$/,
    );
    expect(error!.length).toBeLessThan(260);
  });

  it('an invalid metadata document names its first problem in one line', async () => {
    const { error } = await authorizeWith({ authorizationEndpoint: 'javascript:alert(1)' });
    expect(error).toBe(
      "mcp.secure: OAuth failed: the server's OAuth metadata is not valid (authorization_endpoint: URL cannot use javascript:, data:, or vbscript: scheme): check the server's OAuth configuration",
    );
  });

  it('an OAuth answer over 1 MiB stops the flow', async () => {
    const { error, secure } = await authorizeWith({ metadataPadding: 2 * 1024 * 1024 });
    expect(error).toBe(
      "mcp.secure: OAuth failed: an OAuth answer for mcp.secure is over the 1 MiB limit; the request was stopped: check the server's OAuth configuration",
    );
    expect(secure.oauthLog.registrations).toBe(0);
  });
});

describe('MCP client OAuth: a refresh that fails', () => {
  it('leaves the server needs_auth at once, on connect and on a tool call', async () => {
    const secure = await fakeMcpHttpServer({ oauth: true });
    const app = await makeTestApp({
      config: { mcp: { secure: { type: 'http', url: secure.url, auth: 'oauth' } } },
    });
    expect((await authorize(app)).code).toBe(0);
    const needsAuth = {
      state: 'needs_auth',
      error: 'the stored token was refused and could not be refreshed: run svc mcp auth secure',
      action: 'run svc mcp auth secure',
    };

    // Connecting with a token the server no longer takes, and a refresh token it refuses too.
    secure.revokeAccessTokens();
    secure.revokeRefreshTokens();
    const later = await makeTestApp({ workspace: app.workspace, env: app.env });
    later.mcpClients.start();
    await later.mcpClients.settled({ timeoutMs: 15_000 });
    expect(later.mcpClients.status('secure')[0]).toMatchObject(needsAuth);

    // Connected, then the tokens stop working during a call.
    expect((await authorize(app)).code).toBe(0);
    const third = await makeTestApp({ workspace: app.workspace, env: app.env });
    third.mcpClients.start();
    await third.mcpClients.settled({ timeoutMs: 15_000 });
    expect(third.mcpClients.status('secure')[0].state).toBe('connected');
    secure.revokeAccessTokens();
    secure.revokeRefreshTokens();
    await expect(invokeTool(third, 'mcp_secure_ping', {}, { surface: 'agent' })).rejects.toMatchObject({
      code: 'unauthorized',
    });
    expect(third.mcpClients.status('secure')[0]).toMatchObject({
      state: 'needs_auth',
      action: 'run svc mcp auth secure',
    });
  });
});
