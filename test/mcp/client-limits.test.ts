/**
 * What one MCP server can do to svc with what it sends is bounded (stdio fixture
 * test/fixtures/mcp/stdio-server.mjs and deep-schema-server.mjs, and an HTTP server written here).
 * Pins:
 * - a tool whose input schema is too deep (thousands of levels) or too large (a megabyte property
 *   description) is skipped with a warning; a server's tools are taken up to max_tools (256 by
 *   default); the server stays connected with the rest;
 * - what a server writes to stderr and an HTTP error body reach `svc mcp status` (text and JSON)
 *   without escape sequences or bidi overrides, and cut to a few KB;
 * - a stdio message over the SDK's 10 MiB limit is named as such, at start and during a call;
 * - a tool's answer (text, resource, structured content) reaches callers and the model without
 *   escape sequences, C1 controls or bidi overrides, and uncut; an image's base64 data as sent;
 * - `list_tool_capabilities include_schemas` never holds a server's too deep or too large schema
 *   (such a tool is not registered) and does not fail over it; its schemas stay within
 *   256 KiB in all (MAX_LISTING_SCHEMA_BYTES), svc's own first, the rest listed without and gettable by `tool`.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { resolve } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import type { App } from '../../src/app';
import { MAX_SCHEMA_BYTES } from '../../src/mcp-client/remote-tools';
import { invokeTool } from '../../src/tools/core/call-tool';
import { makeTestApp } from '../helpers/make-test-app';
import { viaCli } from '../helpers/surfaces';

const FIXTURE = resolve(__dirname, '../fixtures/mcp/stdio-server.mjs');
const DEEP_FIXTURE = resolve(__dirname, '../fixtures/mcp/deep-schema-server.mjs');
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
/** The fixture's hostile answer text as svc passes it on: escapes removed, CRs as line breaks. */
const CLEANED = 'okredline\nover\ntab\there<U+202E>txt.exe';

describe('MCP client: limits on what a server sends', () => {
  it('skips a too deep or too large schema and takes at most max_tools tools', async () => {
    const app = await connectedApp({
      evil: stdio({ FAKE_MCP_BIG_SCHEMA: String(1 << 20), FAKE_MCP_MANY: '300' }),
      deep: { command: process.execPath, args: [DEEP_FIXTURE] },
      few: stdio({}, { max_tools: 3 }),
    });
    expect(status(app, 'deep')).toMatchObject({
      state: 'connected',
      tools: ['mcp_deep_echo'],
      warnings: ['skipped: tool "deep": inputSchema is nested deeper than 64 levels'],
    });
    const evil = status(app, 'evil');
    expect(evil.state).toBe('connected');
    expect(evil.tools).toHaveLength(256);
    expect(evil.tools.slice(0, 2)).toEqual(['mcp_evil_echo', 'mcp_evil_write_note']);
    expect(evil.tools).not.toContain('mcp_evil_big_schema');
    expect(evil.warnings).toEqual([
      'skipped: tool "big_schema": inputSchema is 1025 KiB of JSON, over the 64 KiB limit',
      'skipped: 51 more tools past the limit of 256 per server (mcp.evil.max_tools)',
    ]);
    expect(app.tools.get('mcp_deep_deep')).toBeUndefined();
    expect(status(app, 'few').tools).toEqual(['mcp_few_echo', 'mcp_few_write_note', 'mcp_few_slow']);
    const text = await viaCli(app, { command: 'mcp status' }, {}, []);
    expect(text.stdout).toContain(
      'warning: skipped: tool "deep": inputSchema is nested deeper than 64 levels',
    );
  });

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

  it('names a stdio message over the 10 MiB limit, at start and during a call', async () => {
    const app = await connectedApp({
      biglist: stdio({ FAKE_MCP_HUGE: 'list' }),
      bigcall: stdio({ FAKE_MCP_HUGE: 'call' }),
    });
    expect(status(app, 'biglist')).toMatchObject({
      state: 'failed',
      error:
        'the server sent a message over the 10 MiB limit of one stdio MCP message while starting, so svc closed the connection',
    });
    expect(status(app, 'bigcall').state).toBe('connected');
    await expect(invokeTool(app, 'mcp_bigcall_huge', {}, { surface: 'agent' })).rejects.toMatchObject({
      code: 'unavailable',
      message:
        'mcp_bigcall_huge: MCP server bigcall sent a message over the 10 MiB limit of one stdio MCP message during the call, so svc closed the connection',
    });
  });

  it('MCP-CLEAN-1: a tool answer full of escape sequences reaches callers and the model made safe', async () => {
    const app = await connectedApp({
      hostile: stdio({ FAKE_MCP_HOSTILE: '1' }, { trust_annotations: true }),
    });
    expect(status(app, 'hostile').tools).toContain('mcp_hostile_hostile');
    const output = await invokeTool(app, 'mcp_hostile_hostile', {}, { surface: 'agent' });
    expect(output).toEqual({
      mcp_server: 'hostile',
      mcp_tool: 'hostile',
      content: [
        { type: 'text', text: CLEANED },
        { type: 'resource', resource: { uri: 'file:///x', text: CLEANED } },
        { type: 'image', mimeType: 'image/png', data: 'iVBORw0KGgo=' },
      ],
      structured_content: { note: CLEANED, list: [CLEANED, 3], 'k<U+202E>': true },
    });
    expect(JSON.stringify(output)).not.toMatch(/\\u001b|\\r|[\u0080-\u009f\u202e]/);
    const modelText = app.tools.get('mcp_hostile_hostile')!.toModelOutput!(output);
    expect(modelText).toBe(`${CLEANED}\n[resource file:///x]\n${CLEANED}\n[image image/png, 9 bytes]`);
  });

  it('MCP-CLEAN-5: list_tool_capabilities include_schemas holds no schema over the bounds a hostile server sends', async () => {
    const app = await connectedApp({
      big: stdio({ FAKE_MCP_BIG_SCHEMA: String(1 << 20) }),
      deep: { command: process.execPath, args: [DEEP_FIXTURE] },
    });
    const listing = (await invokeTool(
      app,
      'list_tool_capabilities',
      { include_schemas: true },
      { surface: 'cli' },
    )) as { tools: { name: string; input_schema: unknown }[] };
    const remote = listing.tools.filter((t) => t.name.startsWith('mcp_'));
    expect(remote.map((t) => t.name)).toContain('mcp_deep_echo');
    expect(remote.map((t) => t.name)).toContain('mcp_big_echo');
    expect(remote.map((t) => t.name)).not.toContain('mcp_deep_deep');
    expect(remote.map((t) => t.name)).not.toContain('mcp_big_big_schema');
    for (const tool of remote) {
      expect(tool.input_schema).toMatchObject({ type: 'object' });
      expect(JSON.stringify(tool.input_schema).length).toBeLessThan(MAX_SCHEMA_BYTES);
    }
  });

  it("MCP-CLEAN-8: list_tool_capabilities include_schemas holds at most 256 KiB of schemas, svc's own first; one tool's schema is asked for by name", async () => {
    // Eight tools of 60 KB of schema each, under the 64 KiB per tool: 480 KB from one server.
    const app = await connectedApp({ wide: stdio({ FAKE_MCP_MANY: '8', FAKE_MCP_MANY_SCHEMA: '60000' }) });
    expect(status(app, 'wide').tools).toContain('mcp_wide_t7');
    type Listing = {
      count: number;
      tools: { name: string; family: string; input_schema: unknown; input_schema_error?: string }[];
    };
    const list = async (input: Record<string, unknown>) =>
      (await invokeTool(app, 'list_tool_capabilities', input, { surface: 'cli' })) as Listing;
    const listing = await list({ include_schemas: true });
    const bytes = (schema: unknown) => (schema === null ? 0 : Buffer.byteLength(JSON.stringify(schema)));
    expect(listing.tools.reduce((sum, t) => sum + bytes(t.input_schema), 0)).toBeLessThanOrEqual(256 * 1024);
    // svc's own tools all keep theirs: a server cannot crowd them out.
    const own = listing.tools.filter((t) => !t.family.startsWith('mcp:'));
    expect(own.length).toBeGreaterThan(50);
    for (const tool of own) expect(tool.input_schema).toMatchObject({ type: 'object' });
    const wide = listing.tools.filter((t) => t.name.startsWith('mcp_wide_t'));
    expect(wide).toHaveLength(8);
    const given = wide.filter((t) => t.input_schema !== null).map((t) => t.name);
    const left = wide.filter((t) => t.input_schema === null);
    expect(given.length).toBeGreaterThan(0);
    expect(left.length).toBeGreaterThan(0);
    // In name order: the first ones get theirs, the rest none.
    expect(given).toEqual(wide.map((t) => t.name).slice(0, given.length));
    for (const tool of left) {
      expect(tool.input_schema_error).toBe(
        `left out: this listing's schemas reached their 256 KiB budget; list_tool_capabilities with tool "${tool.name}" and include_schemas gives its schema`,
      );
    }
    // Asked for alone, a tool left out gets its schema.
    const one = await list({ tool: 'mcp_wide_t7', include_schemas: true });
    expect(one.count).toBe(1);
    expect(one.tools[0]).toMatchObject({ name: 'mcp_wide_t7', input_schema: { type: 'object' } });
    expect(one.tools[0]).not.toHaveProperty('input_schema_error');
    expect(bytes(one.tools[0].input_schema)).toBeGreaterThan(60_000);
    await expect(list({ tool: 'mcp_wide_nope' })).rejects.toMatchObject({ code: 'not_found' });
  });

  it("MCP-CLEAN-7: a server's schema descriptions and titles are made safe; its enum values stay as sent", async () => {
    const app = await connectedApp({ hostile: stdio({ FAKE_MCP_HOSTILE: '1' }) });
    const listing = (await invokeTool(
      app,
      'list_tool_capabilities',
      { include_schemas: true },
      { surface: 'cli' },
    )) as { tools: { name: string; input_schema: { properties: Record<string, unknown> } }[] };
    const hostile = listing.tools.find((t) => t.name === 'mcp_hostile_hostile')!;
    expect(hostile.input_schema.properties.text).toEqual({
      type: 'string',
      title: 'Thidden',
      description: 'the text<U+202E>',
      enum: ['a\x1b[1m', 'b'],
    });
  });
});
