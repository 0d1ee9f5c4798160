/**
 * Call one tool through each of its surfaces, on the same App state, to compare the JSON.
 * @module
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import type { App } from '../../src/app';
import { runCli } from '../../src/surfaces/cli/index';
import { createHttpApp } from '../../src/surfaces/http/index';
import { createMcpServer } from '../../src/surfaces/mcp/server';
import { invokeTool } from '../../src/tools/core/call-tool';
import type { AnyTool, CliBinding, HttpBinding } from '../../src/tools/core/define-tool';

/** Volatile fields differ between back-to-back calls by design. */
export const VOLATILE_KEYS = new Set([
  'generated_at_unix',
  'generated_at',
  'checked_at',
  'duration_ms',
  'uptime_seconds',
]);

export function maskVolatile<T>(value: T): T {
  if (Array.isArray(value)) return value.map(maskVolatile) as T;
  if (value && typeof value === 'object') {
    return Object.fromEntries(
      Object.entries(value).map(([k, v]) => [k, VOLATILE_KEYS.has(k) ? '<volatile>' : maskVolatile(v)]),
    ) as T;
  }
  return value;
}

export async function viaTool(app: App, tool: AnyTool, input: Record<string, unknown>): Promise<unknown> {
  return app.redactor.value(await invokeTool(app, tool.name, input, { surface: 'agent' }));
}

export async function viaHttp(
  app: App,
  binding: HttpBinding,
  input: Record<string, unknown>,
  options: { token?: string } = {},
): Promise<{ status: number; body: unknown; text: string }> {
  const hono = createHttpApp(app, { allowNoAuth: options.token === undefined, token: options.token });
  let path = binding.path;
  const rest: Record<string, unknown> = { ...input };
  for (const [param, field] of Object.entries(binding.params ?? {})) {
    path = path.replace(`:${param}`, encodeURIComponent(String(rest[field])));
    delete rest[field];
  }
  for (const key of Object.keys(binding.fixed ?? {})) delete rest[key];
  const headers: Record<string, string> = options.token ? { authorization: `Bearer ${options.token}` } : {};
  let response: Response;
  if (binding.method === 'GET' || binding.method === 'DELETE') {
    const query = new URLSearchParams();
    for (const [k, v] of Object.entries(rest)) {
      if (Array.isArray(v)) for (const item of v) query.append(k, String(item));
      else if (v !== undefined) query.set(k, String(v));
    }
    const qs = query.toString();
    response = await hono.request(`${path}${qs ? `?${qs}` : ''}`, { method: binding.method, headers });
  } else {
    response = await hono.request(path, {
      method: binding.method,
      headers: { ...headers, 'content-type': 'application/json' },
      body: JSON.stringify(rest),
    });
  }
  const text = await response.text();
  let body: unknown = text;
  try {
    body = JSON.parse(text);
  } catch {
    // plain-text body
  }
  return { status: response.status, body, text };
}

export async function viaCli(
  app: App,
  binding: CliBinding,
  input: Record<string, unknown>,
  extraArgs: string[] = ['--json'],
): Promise<{ code: number; stdout: string; stderr: string; json?: unknown }> {
  const argv = [...binding.command.split(' ')];
  const positional = (binding.args ?? []).map((a) => a.replace(/\?$/, ''));
  const rest: Record<string, unknown> = { ...input };
  for (const name of positional) {
    if (rest[name] !== undefined) argv.push(String(rest[name]));
    delete rest[name];
  }
  for (const key of Object.keys(binding.fixed ?? {})) delete rest[key];
  for (const [k, v] of Object.entries(rest)) {
    const flag = `--${k.replace(/_/g, '-')}`;
    if (v === true) argv.push(flag);
    else if (v === false || v === undefined) continue;
    else if (Array.isArray(v)) argv.push(flag, ...v.map(String));
    else argv.push(flag, String(v));
  }
  argv.push(...extraArgs, '--cwd', app.workspace, '--data-dir', app.dataDir);
  let stdout = '';
  let stderr = '';
  const code = await runCli(
    argv,
    {
      stdout: { write: (s: string) => (stdout += s) },
      stderr: { write: (s: string) => (stderr += s) },
      env: app.env as Record<string, string | undefined>,
      cwd: app.workspace,
    },
    { appOptions: { clock: app.clock } },
  );
  let json: unknown;
  try {
    json = JSON.parse(stdout);
  } catch {
    json = undefined;
  }
  return { code, stdout, stderr, json };
}

export interface McpCall {
  isError: boolean;
  text: string;
  /** The parsed JSON of the text content (undefined when it is not JSON). */
  json?: unknown;
}

/**
 * Calls a tool's MCP binding through a real SDK Client over an in-memory transport, the server
 * exposing just that tool (as `services.mcp.exposed_tools` would) and bound to `sessionId`.
 */
export async function viaMcp(
  app: App,
  tool: AnyTool,
  input: Record<string, unknown>,
  options: { sessionId?: string } = {},
): Promise<McpCall> {
  const name = tool.surfaces?.mcp;
  if (!name) throw new Error(`${tool.name} has no mcp binding`);
  const server = createMcpServer(app, { exposedTools: [name], sessionId: options.sessionId });
  const client = new Client({ name: 'parity', version: '1.0.0' });
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  await Promise.all([server.connect(serverSide), client.connect(clientSide)]);
  try {
    const result = (await client.callTool({ name, arguments: input })) as {
      isError?: boolean;
      content: { type: string; text?: string }[];
    };
    const text = result.content.map((c) => c.text ?? '').join('');
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      json = undefined;
    }
    return { isError: result.isError === true, text, json };
  } finally {
    await client.close();
    await server.close();
  }
}
