/**
 * `svc service start mcp` as an MCP host runs it: the built dist/main.js as a child process driven
 * by the MCP SDK client. Pins:
 * - GEN-05 / CFG-31: the client lists exactly services.mcp.exposed_tools;
 * - TOOLS-65 / TOOLS-67: each exposed readout answers the HTTP payload of the bound session;
 * - stdout carries only protocol frames; logs go to the data-dir log file; closing stdin stops it;
 * - start-up failures (unknown name, OPMODE-43, unknown --session-id) exit 2 with one
 *   clear stderr line and nothing on stdout;
 * - AUTH-11 / CLI-17 / CLI-18: --transport http with --token enforces the bearer; SIGTERM stops it.
 */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { describe, expect, it, onTestFinished } from 'vitest';
import { createHttpApp } from '../../src/surfaces/http/index';
import { invokeTool } from '../../src/tools/core/call-tool';
import { isolatedEnv, makeTestApp } from '../helpers/make-test-app';
import { BIN, runBin } from '../helpers/run-bin';
import { maskVolatile } from '../helpers/surfaces';
import { tmpWorkspace } from '../helpers/tmp-workspace';

const EXPOSED = [
  'svc_get_workflow_tools_status',
  'svc_get_primitive_tools_status',
  'svc_list_tool_capabilities',
];

/** The user trusts these workspaces (exposed_tools is a trust-gated key; untrusted, a note says so on stderr). */
const trustedEnv = (ws: string) => ({ ...isolatedEnv(ws), SVC_TRUST_WORKSPACE: '1' });

function workspace(exposed: string[], extra = '') {
  const list = exposed.map((n) => JSON.stringify(n)).join(', ');
  return tmpWorkspace({ files: { 'svc.toml': `[services.mcp]\nexposed_tools = [${list}]\n${extra}` } });
}

async function stdioClient(ws: string, args: string[] = []) {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [BIN, 'service', 'start', 'mcp', ...args],
    cwd: ws,
    env: trustedEnv(ws) as Record<string, string>,
    stderr: 'pipe',
  });
  let stderr = '';
  transport.stderr?.on('data', (chunk) => {
    stderr += String(chunk);
  });
  const client = new Client({ name: 'svc-e2e', version: '1.0.0' });
  await client.connect(transport);
  onTestFinished(() => client.close());
  return { client, stderr: () => stderr };
}

const text = (result: unknown) => (result as { content: { text: string }[] }).content[0].text;

describe('svc service start mcp (built binary)', () => {
  it('GEN-05 / TOOLS-65 / TOOLS-67: an MCP client lists the exposed tools and gets the HTTP payloads', async () => {
    const ws = workspace(EXPOSED);
    const app = await makeTestApp({ workspace: ws });
    const session = await app.sessions.create({ title: 'bound', mode: 'plan' });

    const { client, stderr } = await stdioClient(ws, ['--session-id', session.id]);
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name)).toEqual(EXPOSED);

    for (const [name, route] of [
      ['svc_get_workflow_tools_status', '/v1/workflow-tools'],
      ['svc_get_primitive_tools_status', '/v1/primitive-tools'],
    ]) {
      const result = await client.callTool({ name, arguments: {} });
      expect(result.isError ?? false).toBe(false);
      const response = await createHttpApp(app, { allowNoAuth: true }).request(
        `${route}?session_id=${session.id}`,
      );
      expect(JSON.parse(text(result))).toEqual(await response.json());
      expect(JSON.parse(text(result)).context).toMatchObject({ session_id: session.id, mode: 'plan' });
    }
    const capabilities = await client.callTool({ name: 'svc_list_tool_capabilities', arguments: {} });
    expect(JSON.parse(text(capabilities))).toEqual(
      await invokeTool(app, 'list_tool_capabilities', { session_id: session.id }, { surface: 'agent' }),
    );
    await client.close();
    expect(stderr()).toBe('');
    const log = readFileSync(join(ws, '.svc', 'logs', 'svc.log'), 'utf8');
    expect(log).toContain('"message":"mcp server started"');
    expect(log).toContain(`"session_id":"${session.id}"`);
  });

  it('DASH-32 / DASH-47: the dashboard served by svc service start mcp reports the minimal MCP-only runtime', async () => {
    const ws = workspace(['svc_get_multiplayer_coordination_dashboard']);
    const app = await makeTestApp({ workspace: ws });
    const session = await app.sessions.create({ title: 'bound' });
    const { client } = await stdioClient(ws, ['--session-id', session.id]);
    const result = await client.callTool({
      name: 'svc_get_multiplayer_coordination_dashboard',
      arguments: {},
    });
    expect(result.isError ?? false).toBe(false);
    // No session_id argument: the dashboard's own rule (no operator_runtime) wins over the bound session.
    const unscoped = JSON.parse(text(result));
    expect(unscoped.operator_runtime).toBeUndefined();
    const scoped = JSON.parse(
      text(
        await client.callTool({
          name: 'svc_get_multiplayer_coordination_dashboard',
          arguments: { session_id: session.id },
        }),
      ),
    );
    expect(scoped.operator_runtime.checks.boundary_honesty.status).toBe('missing');
    expect(scoped.operator_runtime.warnings).toContain('minimal_mcp_only');
    // The full app (HTTP) answers the same session without that warning.
    const response = await createHttpApp(app, { allowNoAuth: true }).request(
      `/v1/multiplayer-coordination-dashboard?session_id=${session.id}`,
    );
    const full = (await response.json()) as { operator_runtime: { warnings: string[] } };
    expect(full.operator_runtime.warnings).not.toContain('minimal_mcp_only');
  });

  it('OPMODE-41: with operating packs on, svc_get_operating_mode starts and answers the bound session', async () => {
    const ws = workspace(['svc_get_operating_mode'], '[options]\noperating_packs = true\n');
    const app = await makeTestApp({ workspace: ws });
    const session = await app.sessions.create({ title: 'bound' });
    const { client } = await stdioClient(ws, ['--session-id', session.id]);
    const result = await client.callTool({ name: 'svc_get_operating_mode', arguments: {} });
    expect(result.isError ?? false, text(result)).toBe(false);
    const response = await createHttpApp(app, { allowNoAuth: true }).request(
      `/v1/session-operating-mode?session_id=${session.id}`,
    );
    expect(maskVolatile(JSON.parse(text(result)))).toEqual(maskVolatile(await response.json()));
    expect(JSON.parse(text(result))).toMatchObject({ session_id: session.id, enabled: true });
  });

  it('creates a session for itself when none is given', async () => {
    const ws = workspace(['svc_get_workflow_tools_status']);
    const { client } = await stdioClient(ws);
    const result = await client.callTool({ name: 'svc_get_workflow_tools_status', arguments: {} });
    const bound = JSON.parse(text(result)).context.session_id as string;
    expect(bound).toMatch(/^ses_/);
    const app = await makeTestApp({ workspace: ws });
    expect(await app.sessions.get(bound)).toMatchObject({
      title: 'MCP server',
      metadata: { created_by: 'mcp_server' },
    });
  });

  it('CFG-31 / OPMODE-42 / ADAPT-35: exposed_tools unset serves the read-only default, says so on stderr, and creates no session until a tool needs one', async () => {
    const ws = tmpWorkspace({ files: { 'hello.txt': 'hi\n' } });
    const { client, stderr } = await stdioClient(ws);
    const names = (await client.listTools()).tools.map((t) => t.name);
    for (const name of [
      'svc_view',
      'svc_grep',
      'svc_search',
      'svc_get_provider_status',
      'svc_runtime_features',
      'svc_get_workflow_tools_status',
      'svc_get_multiplayer_coordination_dashboard',
    ]) {
      expect(names).toContain(name);
    }
    for (const name of [
      'svc_get_operating_mode',
      'svc_get_adaptive_orchestration',
      'svc_config',
      'svc_bash',
      'svc_write',
      'svc_edit',
      'svc_create_session',
      'svc_agent',
    ]) {
      expect(names).not.toContain(name);
    }
    for (const tool of (await client.listTools()).tools) expect(tool.annotations?.readOnlyHint).toBe(true);
    expect(stderr()).toContain('svc: services.mcp.exposed_tools is unset: serving the');
    expect(stderr()).toContain('svc_view');
    expect(stderr()).toContain('[services.mcp] exposed_tools');
    expect(stderr().trim().split('\n')).toHaveLength(1);

    const features = await client.callTool({ name: 'svc_runtime_features', arguments: {} });
    expect(features.isError ?? false, text(features)).toBe(false);
    const app = await makeTestApp({ workspace: ws });
    expect(await app.sessions.list()).toEqual([]);

    // A tool that reads the bound session (view records what it read; the funnel readout) creates it, once.
    const viewed = await client.callTool({ name: 'svc_view', arguments: { path: 'hello.txt' } });
    expect(viewed.isError ?? false, text(viewed)).toBe(false);
    expect(text(viewed)).toContain('hi');
    const status = await client.callTool({ name: 'svc_get_workflow_tools_status', arguments: {} });
    const bound = JSON.parse(text(status)).context.session_id as string;
    expect((await app.sessions.list()).map((s) => s.id)).toEqual([bound]);
  });

  it('CFG-31: exposed_tools = [] serves no tools and prints nothing', async () => {
    const ws = workspace([]);
    const { client, stderr } = await stdioClient(ws);
    expect((await client.listTools()).tools).toEqual([]);
    await client.close();
    expect(stderr()).toBe('');
  });

  it('writes only protocol frames to stdout and stops when stdin closes', async () => {
    const ws = workspace(['svc_get_primitive_tools_status']);
    const frames = [
      {
        jsonrpc: '2.0',
        id: 1,
        method: 'initialize',
        params: {
          protocolVersion: '2025-06-18',
          capabilities: {},
          clientInfo: { name: 'raw', version: '1' },
        },
      },
      { jsonrpc: '2.0', method: 'notifications/initialized' },
      { jsonrpc: '2.0', id: 2, method: 'tools/list' },
      {
        jsonrpc: '2.0',
        id: 3,
        method: 'tools/call',
        params: { name: 'svc_get_primitive_tools_status', arguments: {} },
      },
    ];
    const result = await runBin(['service', 'start', 'mcp'], {
      cwd: ws,
      env: trustedEnv(ws),
      input: frames.map((f) => JSON.stringify(f)).join('\n') + '\n',
    });
    expect(result.code, result.stderr).toBe(0);
    expect(result.stderr).toBe('');
    const lines = result.stdout.trim().split('\n');
    const messages = lines.map(
      (line) => JSON.parse(line) as { jsonrpc: string; id: number; result?: unknown },
    );
    expect(messages.map((m) => [m.jsonrpc, m.id])).toEqual([
      ['2.0', 1],
      ['2.0', 2],
      ['2.0', 3],
    ]);
    expect(messages[2].result).toMatchObject({ content: [{ type: 'text' }] });
  });

  it('exits 2 with one clear line for start-up failures (unknown tool, OPMODE-43, bad session)', async () => {
    const cases: [string, string[], string][] = [
      [
        workspace(['svc_get_workflow_tools_status', 'svc_nope']),
        [],
        'svc: services.mcp.exposed_tools: no MCP tool named "svc_nope"; MCP tools are: ',
      ],
      [
        workspace(['svc_get_operating_mode']),
        [],
        'svc: services.mcp.exposed_tools lists svc_get_operating_mode but options.operating_packs is false; set options.operating_packs = true or remove it from the list\n',
      ],
      [
        workspace(['svc_capabilities']),
        ['--session-id', 'ses_missing'],
        'svc: --session-id: no session "ses_missing"; see svc session list\n',
      ],
    ];
    for (const [ws, args, message] of cases) {
      const result = await runBin(['service', 'start', 'mcp', ...args], { cwd: ws, env: trustedEnv(ws) });
      expect(result.code, result.stderr).toBe(2);
      expect(result.stdout).toBe('');
      expect(result.stderr.split('\n').filter(Boolean)).toHaveLength(1);
      expect(result.stderr.startsWith(message), result.stderr).toBe(true);
    }
  });

  it('AUTH-11 / CLI-17 / CLI-18: --transport http --token serves streamable HTTP behind the bearer', async () => {
    const ws = workspace(['svc_get_workflow_tools_status']);
    const child = spawn(
      process.execPath,
      [
        BIN,
        'service',
        'start',
        'mcp',
        '--transport',
        'http',
        '--port',
        '0',
        '--auth',
        'bearer',
        '--token',
        'e2e-token-9876',
      ],
      { cwd: ws, env: trustedEnv(ws) as NodeJS.ProcessEnv, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    const exited = new Promise<number | null>((r) => child.on('close', r));
    onTestFinished(() => {
      if (child.exitCode === null) child.kill('SIGKILL');
    });
    let stderr = '';
    let stdout = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    const url = await new Promise<string>((resolvePromise, reject) => {
      const timer = setTimeout(() => reject(new Error(`no listening line: ${stdout} ${stderr}`)), 15_000);
      child.stdout.on('data', () => {
        const match = /^svc: listening on (http:\/\/127\.0\.0\.1:\d+\/mcp)\n$/.exec(stdout);
        if (match) {
          clearTimeout(timer);
          resolvePromise(match[1]);
        }
      });
    });
    const unauthorized = await fetch(url, {
      method: 'POST',
      body: '{}',
      headers: { 'content-type': 'application/json' },
    });
    expect(unauthorized.status).toBe(401);
    const client = new Client({ name: 'svc-e2e', version: '1.0.0' });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(url), {
        requestInit: { headers: { authorization: 'Bearer e2e-token-9876' } },
      }),
    );
    expect((await client.listTools()).tools.map((t) => t.name)).toEqual(['svc_get_workflow_tools_status']);
    await client.close();
    child.kill('SIGTERM');
    expect(await exited).toBe(0);
    expect(stdout).toBe(`svc: listening on ${url}\n`);
    expect(stderr).not.toContain('e2e-token-9876');
  });
});
