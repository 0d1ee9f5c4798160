/**
 * The MCP client against HTTP servers written in the test (test/helpers/fake-mcp-server.ts).
 * Pins:
 * - streamable HTTP and legacy SSE servers connect, list and call; `headers` are sent;
 * - a 401 without OAuth and an unreachable URL are clear failures;
 * - CFG-30 / AUTH-10: `auth = "oauth"` makes a server need authorization (others are untouched),
 *   `svc mcp auth <id>` runs authorization code + PKCE with dynamic client registration through a
 *   loopback callback, stores the tokens in a 0600 file, the server then connects (also from a new
 *   process), an expired token is refreshed, and `svc mcp logout <id>` forgets it.
 */
import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { App } from '../../src/app';
import { openerCommand } from '../../src/surfaces/cli/commands/mcp';
import { invokeTool } from '../../src/tools/core/call-tool';
import { appCli } from '../helpers/app-cli';
import { approveInBrowser, fakeMcpHttpServer } from '../helpers/fake-mcp-server';
import { makeTestApp } from '../helpers/make-test-app';

async function settle(app: App) {
  app.mcpClients.start();
  await app.mcpClients.settled({ timeoutMs: 15_000 });
}
const status = (app: App, id: string) => app.mcpClients.status(id)[0];

const cli = appCli;

describe('MCP client: HTTP servers', () => {
  it('connects to a streamable HTTP server with headers and calls its tools', async () => {
    const server = await fakeMcpHttpServer({ requireHeader: { name: 'x-api-key', value: 'k-1234567' } });
    const app = await makeTestApp({
      config: { mcp: { remote: { type: 'http', url: server.url, headers: { 'x-api-key': 'k-1234567' } } } },
    });
    await settle(app);
    expect(status(app, 'remote')).toMatchObject({
      state: 'connected',
      type: 'http',
      tools: ['mcp_remote_ping'],
      server: { name: 'fake-http', version: '2.0.0' },
    });
    expect(await invokeTool(app, 'mcp_remote_ping', { who: 'svc' }, { surface: 'agent' })).toMatchObject({
      content: [{ type: 'text', text: 'pong svc' }],
    });
    expect(server.calls).toEqual([{ tool: 'ping', args: { who: 'svc' }, authorization: undefined }]);
  });

  it('connects to a legacy SSE server', async () => {
    const server = await fakeMcpHttpServer({ name: 'legacy' });
    const app = await makeTestApp({ config: { mcp: { old: { type: 'sse', url: server.sseUrl } } } });
    await settle(app);
    expect(status(app, 'old')).toMatchObject({ state: 'connected', type: 'sse', server: { name: 'legacy' } });
    expect(await invokeTool(app, 'mcp_old_ping', {}, { surface: 'agent' })).toMatchObject({
      content: [{ text: 'pong' }],
    });
  });

  it('reports a 401 without OAuth and an unreachable server clearly', async () => {
    const server = await fakeMcpHttpServer({ requireHeader: { name: 'x-api-key', value: 'k-1234567' } });
    const dead = await fakeMcpHttpServer();
    await dead.close();
    const app = await makeTestApp({
      config: { mcp: { locked: { type: 'http', url: server.url }, gone: { url: dead.url } } },
    });
    await settle(app);
    expect(status(app, 'locked')).toMatchObject({
      state: 'failed',
      error:
        'the server answered 401 Unauthorized; set headers (e.g. Authorization) or auth = "oauth" in [mcp.locked]',
    });
    expect(status(app, 'gone')).toMatchObject({
      state: 'failed',
      error: expect.stringContaining(`cannot reach ${dead.url}`),
    });
  });
});

describe('MCP client: OAuth', () => {
  it('CFG-30: auth = "oauth" needs authorization before connecting; a server without it is untouched', async () => {
    const secure = await fakeMcpHttpServer({ oauth: true });
    const plain = await fakeMcpHttpServer();
    const app = await makeTestApp({
      config: {
        mcp: { secure: { type: 'http', url: secure.url, auth: 'oauth' }, plain: { url: plain.url } },
      },
    });
    await settle(app);
    expect(status(app, 'secure')).toMatchObject({
      state: 'needs_auth',
      auth: 'oauth',
      error: 'not authorized yet: run svc mcp auth secure',
      action: 'run svc mcp auth secure',
    });
    expect(status(app, 'plain')).toMatchObject({ state: 'connected', auth: 'none' });
    // Background connects never start a browser flow on their own.
    expect(secure.oauthLog).toEqual({ registrations: 0, authorizations: 0, codeExchanges: 0, refreshes: 0 });
    const refused = await cli(app, ['mcp', 'auth', 'plain', '--no-browser']);
    expect(refused).toMatchObject({
      code: 2,
      stderr: 'svc: mcp.plain.auth is not "oauth"; set auth = "oauth" in [mcp.plain] first\n',
    });
  });

  it('AUTH-10: svc mcp auth completes through the browser callback; the server connects, refreshes, logs out', async () => {
    const secure = await fakeMcpHttpServer({ oauth: true });
    const app = await makeTestApp({
      config: { mcp: { secure: { type: 'http', url: secure.url, auth: 'oauth' } } },
    });

    let approved: Promise<number> | undefined;
    const auth = await cli(app, ['mcp', 'auth', 'secure', '--no-browser'], (stderr) => {
      const url = /(http:\/\/127\.0\.0\.1:\d+\/authorize\?\S+)/.exec(stderr)?.[1];
      if (url && !approved) approved = approveInBrowser(url);
    });
    expect(auth.code, auth.stderr).toBe(0);
    expect(await approved).toBe(200);
    expect(auth.stdout).toBe('mcp.secure: authorized; connected, 1 tool\n');
    expect(auth.stderr).toContain('svc: open this URL to authorize mcp.secure:');
    expect(secure.oauthLog).toMatchObject({ registrations: 1, authorizations: 1, codeExchanges: 1 });

    // Stored durably, owner-only, in the user config dir.
    const file = join(app.env.XDG_CONFIG_HOME!, 'svc', 'mcp-auth.json');
    expect(statSync(file).mode & 0o777).toBe(0o600);
    const stored = JSON.parse(readFileSync(file, 'utf8')) as {
      servers: Record<
        string,
        { server_url: string; tokens: { access_token: string; refresh_token: string } }
      >;
    };
    expect(stored.servers.secure.server_url).toBe(secure.url);
    expect(stored.servers.secure.tokens.access_token).toMatch(/^at_/);
    expect(auth.stdout + auth.stderr).not.toContain(stored.servers.secure.tokens.access_token);

    // A new process connects with the stored token: reconnect + status.
    const later = await makeTestApp({ workspace: app.workspace, env: app.env });
    await settle(later);
    expect(status(later, 'secure')).toMatchObject({ state: 'connected', tools: ['mcp_secure_ping'] });
    await invokeTool(later, 'mcp_secure_ping', { who: 'a' }, { surface: 'agent' });
    expect(secure.calls.at(-1)?.authorization).toBe(`Bearer ${stored.servers.secure.tokens.access_token}`);

    // An access token the server stops accepting is refreshed with the refresh token.
    secure.revokeAccessTokens();
    expect(await invokeTool(later, 'mcp_secure_ping', { who: 'b' }, { surface: 'agent' })).toMatchObject({
      content: [{ text: 'pong b' }],
    });
    expect(secure.oauthLog.refreshes).toBe(1);
    const refreshed = JSON.parse(readFileSync(file, 'utf8')).servers.secure.tokens.access_token as string;
    expect(refreshed).not.toBe(stored.servers.secure.tokens.access_token);
    expect(secure.calls.at(-1)?.authorization).toBe(`Bearer ${refreshed}`);
    expect(later.redactor.string(`x ${refreshed}`)).not.toContain(refreshed);

    // Logout forgets the credentials; the server needs authorization again.
    const logout = await cli(app, ['mcp', 'logout', 'secure']);
    expect(logout).toMatchObject({
      code: 0,
      stdout: `mcp.secure: logged out (credentials removed from ${file})\n`,
    });
    expect(JSON.parse(readFileSync(file, 'utf8')).servers).toEqual({});
    const after = await makeTestApp({ workspace: app.workspace, env: app.env });
    await settle(after);
    expect(status(after, 'secure').state).toBe('needs_auth');
  });

  it('AUTH-10: a callback that never comes ends the flow with a clear error', async () => {
    const secure = await fakeMcpHttpServer({ oauth: true });
    const app = await makeTestApp({
      config: { mcp: { secure: { type: 'http', url: secure.url, auth: 'oauth' } } },
    });
    const result = await cli(app, ['mcp', 'auth', 'secure', '--no-browser', '--timeout', '0.5']);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('svc: authorization was not completed: no browser callback arrived\n');
    expect(status(app, 'secure').state).toBe('idle');
  });

  it.each([
    ['file:///etc/passwd', 'scheme file: (no host)'],
    ['http://auth.example.com/authorize', 'scheme http: (host auth.example.com)'],
    ['smb://attacker.example/share', 'scheme smb: (host attacker.example)'],
  ])('an authorization URL %s from the server metadata is refused, never opened', async (endpoint, shown) => {
    const secure = await fakeMcpHttpServer({ oauth: true, authorizationEndpoint: endpoint });
    const app = await makeTestApp({
      config: { mcp: { secure: { type: 'http', url: secure.url, auth: 'oauth' } } },
    });
    const result = await cli(app, ['mcp', 'auth', 'secure', '--no-browser', '--timeout', '5']);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(
      `the authorization URL in the OAuth metadata of mcp.secure has ${shown}; svc opens only https: URLs (or http: on a loopback host)`,
    );
    expect(result.stderr).not.toContain('open this URL');
    expect(secure.oauthLog.authorizations).toBe(0);
  });

  it('the browser opener takes the URL as one argument, with no shell on Windows', () => {
    const url = 'https://auth.example.com/authorize?a=1&calc.exe&b=2';
    expect(openerCommand(url, 'win32')).toEqual(['rundll32', ['url.dll,FileProtocolHandler', url]]);
    expect(openerCommand(url, 'darwin')).toEqual(['open', [url]]);
    expect(openerCommand(url, 'linux')).toEqual(['xdg-open', [url]]);
  });
});
