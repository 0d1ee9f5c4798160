/**
 * The MCP client against real stdio servers (test/fixtures/mcp/stdio-server.mjs). Pins:
 * - nothing connects at start-up; start() returns at once and connects every server in parallel;
 * - a server's tools join the registry as mcp_<id>_<tool> with its JSON Schema, go through the
 *   funnel (options.disabled_tools hides them) and ask permission, unless the block sets
 *   trust_annotations and the tool says readOnlyHint;
 * - env (with ${ENV} interpolated by config) and cwd reach the server;
 * - a command not found, a server that exits at start (stderr tail), a malformed tool schema, a
 *   server listed twice and a timed-out call each give a clear status or error, and the other
 *   servers keep working;
 * - a crashed server is reconnected; a failed one is retried on demand.
 */
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { SvcError } from '../../src/errors';
import { createLocalClient } from '../../src/surfaces/tui/local-client';
import { invokeTool } from '../../src/tools/core/call-tool';
import type { PermissionRequest } from '../../src/tools/core/define-tool';
import { isolatedEnv, makeTestApp } from '../helpers/make-test-app';
import { viaCli } from '../helpers/surfaces';
import { tmpWorkspace } from '../helpers/tmp-workspace';

const FIXTURE = resolve(__dirname, '../fixtures/mcp/stdio-server.mjs');

function stdio(env: Record<string, string> = {}, extra: Record<string, unknown> = {}) {
  return { type: 'stdio', command: process.execPath, args: [FIXTURE], env, ...extra };
}

async function connectedApp(mcp: Record<string, unknown>, config: Record<string, unknown> = {}) {
  const app = await makeTestApp({ config: { mcp, ...config } });
  app.mcpClients.start();
  await app.mcpClients.settled({ timeoutMs: 15_000 });
  return app;
}

const status = (app: Awaited<ReturnType<typeof makeTestApp>>, id: string) => app.mcpClients.status(id)[0];

describe('MCP client: stdio servers', () => {
  it('connects lazily and in parallel, never during start-up', async () => {
    const app = await makeTestApp({
      config: { mcp: { one: stdio(), two: stdio({ FAKE_MCP_NAME: 'two' }) } },
    });
    expect(app.mcpClients.status().map((s) => s.state)).toEqual(['idle', 'idle']);
    expect(app.tools.get('mcp_one_echo')).toBeUndefined();
    app.mcpClients.start();
    // start() returns before anything has connected: both are in flight at once.
    expect(app.mcpClients.status().map((s) => s.state)).toEqual(['connecting', 'connecting']);
    await app.mcpClients.settled({ timeoutMs: 15_000 });
    expect(app.mcpClients.status().map((s) => [s.id, s.state, s.server?.name])).toEqual([
      ['one', 'connected', 'fake'],
      ['two', 'connected', 'two'],
    ]);
    expect(app.tools.get('mcp_two_echo')).toBeDefined();
  });

  it('the first prompt assembly starts the connections', async () => {
    const app = await makeTestApp({ config: { mcp: { one: stdio() } } });
    for (const section of app.promptSections) await section('ses_x');
    expect(status(app, 'one').state).toBe('connecting');
    await app.mcpClients.settled({ timeoutMs: 15_000 });
    expect(status(app, 'one').state).toBe('connected');
  });

  it('registers prefixed tools with the remote JSON Schema and calls them', async () => {
    const app = await connectedApp({ fake: stdio() });
    expect(status(app, 'fake').tools).toEqual([
      'mcp_fake_echo',
      'mcp_fake_write_note',
      'mcp_fake_slow',
      'mcp_fake_crash',
      'mcp_fake_fail',
      'mcp_fake_whoami',
      'mcp_fake_grow',
    ]);
    const echo = app.tools.get('mcp_fake_echo')!;
    // readOnlyHint is a hint from the server: not believed unless the block says so.
    expect(echo).toMatchObject({ family: 'mcp:fake', mutates: true });
    expect(echo.description).toContain('Echo the text back.');
    expect(z.toJSONSchema(echo.input, { io: 'input' })).toMatchObject({
      type: 'object',
      properties: { text: { type: 'string', description: 'what to echo' } },
      required: ['text'],
    });
    const output = await invokeTool(app, 'mcp_fake_echo', { text: 'hi' }, { surface: 'agent' });
    expect(output).toEqual({
      mcp_server: 'fake',
      mcp_tool: 'echo',
      content: [{ type: 'text', text: 'echo: hi' }],
    });
    expect(echo.toModelOutput?.(output)).toBe('echo: hi');
    const entry = app.funnel().find((e) => e.name === 'mcp_fake_write_note');
    expect(entry).toMatchObject({ effective: true, mutates: true, permission: 'ask' });
  });

  it('follows tools/list_changed notifications', async () => {
    const app = await connectedApp({ fake: stdio() });
    expect(app.tools.get('mcp_fake_extra')).toBeUndefined();
    await invokeTool(app, 'mcp_fake_grow', {}, { surface: 'agent' });
    const deadline = Date.now() + 15_000;
    while (!app.tools.get('mcp_fake_extra') && Date.now() < deadline) await sleep(20);
    expect(await invokeTool(app, 'mcp_fake_extra', {}, { surface: 'agent' })).toMatchObject({
      content: [{ text: 'extra here' }],
    });
    expect(status(app, 'fake').tools).toContain('mcp_fake_extra');
  });

  it('hides a server tool listed in options.disabled_tools', async () => {
    const app = await connectedApp({ fake: stdio() }, { options: { disabled_tools: ['mcp_fake_echo'] } });
    expect(app.funnel().find((e) => e.name === 'mcp_fake_echo')).toMatchObject({
      effective: false,
      removed_by: 'disabled_tools',
    });
    expect(app.funnel().find((e) => e.name === 'mcp_fake_whoami')).toMatchObject({ effective: true });
  });

  it('asks permission for every tool unless trust_annotations; a denial never reaches the server', async () => {
    const callsFile = join(tmpWorkspace(), 'calls.log');
    const untrusted = await connectedApp({ fake: stdio({ FAKE_MCP_CALLS_FILE: callsFile }) });
    const asked: PermissionRequest[] = [];
    const allow = async (request: PermissionRequest) => {
      asked.push(request);
    };
    // The server marks echo readOnlyHint; by default that does not spare the ask.
    await invokeTool(untrusted, 'mcp_fake_echo', { text: 'a' }, { surface: 'agent', ask: allow });
    expect(asked.map((r) => r.title)).toEqual(['echo on MCP server fake']);
    asked.length = 0;
    const app = await connectedApp({
      fake: stdio({ FAKE_MCP_CALLS_FILE: callsFile }, { trust_annotations: true }),
    });
    await invokeTool(app, 'mcp_fake_echo', { text: 'a' }, { surface: 'agent', ask: allow });
    expect(asked).toEqual([]);
    const output = await invokeTool(
      app,
      'mcp_fake_write_note',
      { note: 'n1' },
      { surface: 'agent', ask: allow },
    );
    expect(output).toMatchObject({ content: [{ text: 'noted: n1' }] });
    expect(asked).toEqual([
      {
        tool: 'mcp_fake_write_note',
        title: 'write_note on MCP server fake',
        scope: 'mcp_fake_write_note',
        details: { mcp_server: 'fake', mcp_tool: 'write_note', arguments: { note: 'n1' } },
      },
    ]);
    const deny = async () => {
      throw new SvcError('forbidden', 'denied by the operator');
    };
    await expect(
      invokeTool(app, 'mcp_fake_write_note', { note: 'n2' }, { surface: 'agent', ask: deny }),
    ).rejects.toMatchObject({ code: 'forbidden' });
    const calls = readFileSync(callsFile, 'utf8')
      .trim()
      .split('\n')
      .map((l) => l.split(' ')[1]);
    expect(calls).toEqual(['echo', 'echo', 'write_note']);
  });

  it('passes env (interpolated by config) and cwd to the server', async () => {
    const workspace = tmpWorkspace({ files: { 'tools/.keep': '' } });
    const app = await makeTestApp({
      workspace,
      env: isolatedEnv(workspace, { MY_SECRET_TOKEN: 'tok-123456789' }),
      config: { mcp: { fake: stdio({ FAKE_TOKEN: '${MY_SECRET_TOKEN}' }, { cwd: 'tools' }) } },
    });
    app.mcpClients.start();
    await app.mcpClients.settled({ timeoutMs: 15_000 });
    const output = (await invokeTool(app, 'mcp_fake_whoami', {}, { surface: 'agent' })) as {
      content: { text: string }[];
    };
    expect(JSON.parse(output.content[0].text)).toEqual({
      cwd: join(workspace, 'tools'),
      // The server received the interpolated secret; what comes back is redacted like all output.
      token: '[REDACTED]',
      token_sha256: createHash('sha256').update('tok-123456789').digest('hex'),
      home: app.env.HOME,
    });
    // The interpolated secret is redacted from anything svc prints.
    expect(app.redactor.string('token tok-123456789')).not.toContain('tok-123456789');
  });

  it('reports each bad server clearly and keeps the good one working', async () => {
    const app = await connectedApp({
      good: stdio(),
      missing: { type: 'stdio', command: 'svc-no-such-mcp-server', args: [] },
      broken: stdio({ FAKE_MCP_EXIT: '3', FAKE_MCP_STDERR: 'fatal: cannot open the database\nbye' }),
      malformed: stdio({ FAKE_MCP_MALFORMED: '1' }),
      twin: stdio(),
      nourl: { type: 'http' },
    });
    expect(status(app, 'missing')).toMatchObject({
      state: 'failed',
      error: 'mcp.missing.command: command not found: svc-no-such-mcp-server (searched PATH)',
    });
    expect(status(app, 'broken')).toMatchObject({
      state: 'failed',
      error: expect.stringContaining('exited or closed the connection while starting (see stderr_tail)'),
      stderr_tail: ['fatal: cannot open the database', 'bye'],
    });
    expect(status(app, 'malformed').state).toBe('connected');
    expect(status(app, 'malformed').tools).toContain('mcp_malformed_echo');
    expect(status(app, 'malformed').warnings).toEqual([
      'skipped: tool "bad_schema": inputSchema.type must be "object", got "string"',
      'skipped: tool "bad_props": inputSchema.properties is not an object',
      'skipped: a tool has no name',
    ]);
    expect(status(app, 'twin')).toMatchObject({
      state: 'failed',
      error: expect.stringContaining('mcp.twin is the same server as mcp.good'),
    });
    expect(status(app, 'nourl')).toMatchObject({
      state: 'failed',
      error: 'mcp.nourl.url is required for a http server',
    });
    expect(
      await invokeTool(app, 'mcp_good_echo', { text: 'still here' }, { surface: 'agent' }),
    ).toMatchObject({
      content: [{ text: 'echo: still here' }],
    });
  });

  it('turns a timed-out call into a timeout error and stays connected', async () => {
    // 2 s, not less: the echo after it has the same bound, and a loaded CI box (load 8–10) once took
    // over 0.5 s to answer it.
    const app = await connectedApp({ fake: stdio({}, { timeout: 2 }) });
    const started = Date.now();
    await expect(
      invokeTool(app, 'mcp_fake_slow', { ms: 20_000 }, { surface: 'agent' }),
    ).rejects.toMatchObject({
      code: 'timeout',
      message: 'mcp_fake_slow: MCP server fake did not answer within 2s (mcp.fake.timeout)',
    });
    expect(Date.now() - started).toBeLessThan(12_000);
    expect(status(app, 'fake').state).toBe('connected');
    expect(await invokeTool(app, 'mcp_fake_echo', { text: 'ok' }, { surface: 'agent' })).toMatchObject({
      content: [{ text: 'echo: ok' }],
    });
  });

  it('gives the remote error of an isError result to the caller', async () => {
    const app = await connectedApp({ fake: stdio() });
    await expect(invokeTool(app, 'mcp_fake_fail', {}, { surface: 'agent' })).rejects.toMatchObject({
      code: 'invalid_input',
      message: 'mcp_fake_fail: the fail tool always fails',
    });
  });

  it('reconnects a server that crashed', async () => {
    const app = await connectedApp({ fake: stdio() });
    const first = status(app, 'fake').attempts;
    await invokeTool(app, 'mcp_fake_crash', {}, { surface: 'agent' }).catch(() => {});
    // The next call waits for the reconnect instead of failing.
    const deadline = Date.now() + 10_000;
    while (status(app, 'fake').attempts === first && Date.now() < deadline) await sleep(50);
    expect(await invokeTool(app, 'mcp_fake_echo', { text: 'back' }, { surface: 'agent' })).toMatchObject({
      content: [{ text: 'echo: back' }],
    });
    expect(status(app, 'fake')).toMatchObject({ state: 'connected', attempts: first + 1, error: null });
  });

  it('retries a failed server on demand', async () => {
    const flag = join(tmpWorkspace(), 'fail-now');
    writeFileSync(flag, '');
    const app = await connectedApp({ flaky: stdio({ FAKE_MCP_EXIT_IF_FILE: flag }) });
    expect(status(app, 'flaky').state).toBe('failed');
    rmSync(flag);
    expect(existsSync(flag)).toBe(false);
    // Asking for the status is a demand: the failed server is tried again at once.
    const report = (await invokeTool(app, 'mcp_status', {}, { surface: 'tui' })) as {
      servers: { id: string; state: string; attempts: number }[];
    };
    expect(report.servers).toMatchObject([{ id: 'flaky', state: 'connected', attempts: 2 }]);
    expect(app.tools.get('mcp_flaky_echo')).toBeDefined();
    // connect(id) leaves a connected server alone (the flag would make a restart fail).
    writeFileSync(flag, '');
    expect(await app.mcpClients.connect('flaky')).toMatchObject({ state: 'connected', attempts: 2 });
  });

  it('leaves a disabled server alone', async () => {
    const app = await connectedApp({ off: stdio({}, { disabled: true }) });
    expect(status(app, 'off')).toMatchObject({
      state: 'disabled',
      attempts: 0,
      action: 'set mcp.off.disabled = false to use it',
    });
  });

  it('the TUI /mcp readout reuses mcp_status', async () => {
    const app = await makeTestApp({ config: { mcp: { fake: stdio() } } });
    const answer = (await createLocalClient(app).callTool('mcp_status', {})) as {
      value: { servers: { id: string; state: string }[] };
      text: string;
    };
    expect(answer.value.servers).toMatchObject([{ id: 'fake', state: 'connected' }]);
    expect(answer.text).toContain('✓ fake');
  });

  it('svc mcp status --json and svc mcp list print the same read model as the mcp_status tool', async () => {
    const app = await makeTestApp({
      config: { mcp: { fake: stdio(), missing: { command: 'svc-no-such-mcp-server' } } },
    });
    const list = await viaCli(app, { command: 'mcp list' }, {});
    expect(list.code, list.stderr).toBe(0);
    expect(list.json).toMatchObject({
      servers: [
        { id: 'fake', state: 'idle', type: 'stdio' },
        { id: 'missing', state: 'idle' },
      ],
      counts: { configured: 2, connected: 0 },
    });
    const cli = await viaCli(app, { command: 'mcp status' }, {});
    expect(cli.code, cli.stderr).toBe(0);
    expect(cli.json).toMatchObject({
      servers: [
        { id: 'fake', state: 'connected', tools: expect.arrayContaining(['mcp_fake_echo']) },
        { id: 'missing', state: 'failed', error: expect.stringContaining('command not found') },
      ],
      counts: { configured: 2, connected: 1, failed: 1 },
      tool_count: 7,
    });
    const text = await viaCli(app, { command: 'mcp status' }, {}, []);
    expect(text.stdout).toContain('✓ fake');
    expect(text.stdout).toContain('✗ missing');
    const unknown = await viaCli(app, { command: 'mcp status', args: ['server?'] }, { server: 'nope' });
    expect(unknown.code).toBe(1);
    // Its last line (an untrusted workspace's note on the MCP commands it sets may come first).
    expect(unknown.stderr.split('\n').filter(Boolean).at(-1)).toBe(
      'svc: no MCP server "nope" in the config; configured: fake, missing',
    );
  });

  it('MCP-SHELL-1: a server started through bash sources no ~/.bashrc (whose output would be read as the protocol)', async () => {
    const home = tmpWorkspace();
    const marker = join(home, 'bashrc-ran');
    writeFileSync(join(home, '.bashrc'), `echo "welcome from .bashrc"\necho sourced >> '${marker}'\n`);
    const app = await connectedApp({
      wrapped: {
        type: 'stdio',
        command: 'bash',
        args: ['-c', `exec '${process.execPath}' '${FIXTURE}'`],
        env: { HOME: home },
      },
    });
    expect(existsSync(marker)).toBe(false);
    expect(status(app, 'wrapped').state).toBe('connected');
    expect(app.tools.get('mcp_wrapped_echo')).toBeDefined();
  });
});

function sleep(ms: number) {
  return new Promise((r) => setTimeout(r, ms));
}
