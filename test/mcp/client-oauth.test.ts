/**
 * `svc mcp auth <id>` against a misbehaving or hostile party (test/helpers/fake-mcp-server.ts).
 * Pins:
 * - the loopback callback takes only a callback carrying the flow's `state`: one arriving early
 *   (while the client registers) or without it, an error callback included, is refused and the
 *   real one still completes the flow;
 */
import { createServer } from 'node:net';
import { describe, expect, it } from 'vitest';
import type { App } from '../../src/app';
import { runCli } from '../../src/surfaces/cli/index';
import { approveInBrowser, fakeMcpHttpServer } from '../helpers/fake-mcp-server';
import { makeTestApp } from '../helpers/make-test-app';

async function cli(app: App, args: string[], onStderr?: (text: string) => void) {
  let stdout = '';
  let stderr = '';
  const code = await runCli([...args, '--cwd', app.workspace, '--data-dir', app.dataDir], {
    stdout: { write: (s: string) => (stdout += s) },
    stderr: {
      write: (s: string) => {
        stderr += s;
        onStderr?.(stderr);
      },
    },
    env: app.env as Record<string, string | undefined>,
    cwd: app.workspace,
  });
  return { code, stdout, stderr };
}

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
