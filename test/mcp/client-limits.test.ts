/**
 * What one MCP server can do to svc with what it sends is bounded (stdio fixture
 * test/fixtures/mcp/stdio-server.mjs, and an HTTP server written here). Pins:
 * - what a server writes to stderr and an HTTP error body reach `svc mcp status` (text and JSON)
 *   without escape sequences or bidi overrides, and cut to a few KB.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { resolve } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import type { App } from '../../src/app';
import { makeTestApp } from '../helpers/make-test-app';
import { viaCli } from '../helpers/surfaces';

const FIXTURE = resolve(__dirname, '../fixtures/mcp/stdio-server.mjs');
const CONTROLS = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u202e]/;
const HOSTILE = 'boom\x1b[2J\x1b]0;evil-title\x07\x1b[31mred\u202eabc';

function stdio(env: Record<string, string> = {}, extra: Record<string, unknown> = {}) {
  return { type: 'stdio', command: process.execPath, args: [FIXTURE], env, ...extra };
}

async function connectedApp(mcp: Record<string, unknown>) {
  const app = await makeTestApp({ config: { mcp } });
  app.mcpClients.start();
  await app.mcpClients.settled({ timeoutMs: 30_000 });
  return app;
}

const status = (app: App, id: string) => app.mcpClients.status(id)[0];

describe('MCP client: limits on what a server sends', () => {
  it("shows a server's stderr in svc mcp status without escape sequences", async () => {
    const app = await connectedApp({ broken: stdio({ FAKE_MCP_EXIT: '3', FAKE_MCP_STDERR: HOSTILE }) });
    expect(status(app, 'broken')).toMatchObject({
      state: 'failed',
      stderr_tail: ['boomredabc'.replace('abc', '<U+202E>abc')],
    });
    const text = await viaCli(app, { command: 'mcp status' }, {}, []);
    expect(text.stdout).toContain('      boomred<U+202E>abc');
    expect(text.stdout).not.toMatch(CONTROLS);
    const json = await viaCli(app, { command: 'mcp status' }, {});
    expect(json.stdout).toContain('boomred<U+202E>abc');
    expect(json.stdout).not.toMatch(/\\u001b|\u202e/);
  });

  it('shows an HTTP error body made safe and cut to a few KB, in text and JSON', async () => {
    const body = `${HOSTILE}${'B'.repeat(5 * 1024 * 1024)}`;
    const server = createServer((_req, res) => res.writeHead(500).end(body));
    await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
    onTestFinished(() => new Promise<void>((done) => server.close(() => done())));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`;
    const app = await connectedApp({ h5: { type: 'http', url } });
    const { state, error } = status(app, 'h5');
    expect(state).toBe('failed');
    expect(error).toContain('boomred<U+202E>abcBBB');
    expect(error).toMatch(/… \[cut: \d+ characters in all\]$/);
    expect(error!.length).toBeLessThan(5000);
    const text = await viaCli(app, { command: 'mcp status' }, {}, []);
    expect(text.stdout).not.toMatch(CONTROLS);
    expect(text.stdout.length).toBeLessThan(6000);
    const json = await viaCli(app, { command: 'mcp status' }, {});
    expect(json.stdout.length).toBeLessThan(6000);
  });
});
