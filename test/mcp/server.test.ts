/**
 * The MCP server in process (SDK Client over InMemoryTransport, and streamable HTTP on
 * 127.0.0.1:0). Pins:
 * - CFG-31: only names in services.mcp.exposed_tools are listed; a listed name that is no MCP tool
 *   is a config error naming it;
 * - each tool's inputSchema and description come from its definition; results are the HTTP payload
 *   as JSON text (TOOLS-65, TOOLS-67); the MCP-bound session is the default session;
 * - unknown tool / bad input → InvalidParams; a failure inside → isError with the message;
 *   DASH-68: an unwired provider (or a closed gate) → tool error text containing "not available";
 * - OPMODE-41..45: the operating-mode tool defaults to the bound session, is listed only when
 *   exposed, and start-up fails when packs are off, there is no coordinator, or no parity;
 * - AUTH-11: the HTTP transport enforces bearer auth from --token / [services.mcp].
 */
import { request as httpRequest } from 'node:http';
import { connect as netConnect, type Socket } from 'node:net';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { ErrorCode } from '@modelcontextprotocol/sdk/types.js';
import { describe, expect, it, onTestFinished } from 'vitest';
import { z } from 'zod';
import type { App } from '../../src/app';
import { SvcError } from '../../src/errors';
import { createHttpApp } from '../../src/surfaces/http/index';
import { checkOperatingMode, resolveExposedTools } from '../../src/surfaces/mcp/exposed-tools';
import { MCP_MAX_BODY_BYTES } from '../../src/surfaces/mcp/http-transport';
import { createMcpServer } from '../../src/surfaces/mcp/server';
import { startMcpService } from '../../src/surfaces/mcp/service';
import { type AnyTool, defineTool } from '../../src/tools/core/define-tool';
import { allTools } from '../../src/tools/index';
import { makeTestApp, type TestAppOptions } from '../helpers/make-test-app';
import { maskVolatile } from '../helpers/surfaces';

// Tools standing in for failure modes of other helpers' readouts.
const fakeUnwired = defineTool({
  name: 'unwired_readout',
  family: 'test',
  tag: 'primitive',
  description: 'A readout whose provider is not wired.',
  input: z.strictObject({}),
  mutates: false,
  surfaces: { mcp: 'svc_unwired_readout' },
  run: async () => {
    throw new SvcError('unavailable', 'the readout provider is not wired in this runtime');
  },
});
const fakeBroken = defineTool({
  name: 'broken_readout',
  family: 'test',
  tag: 'primitive',
  description: 'Always fails inside.',
  input: z.strictObject({}),
  mutates: false,
  surfaces: { mcp: 'svc_broken_readout' },
  run: async () => {
    throw new Error('boom');
  },
});
const TOOLS = [...allTools, fakeUnwired, fakeBroken] as AnyTool[];

async function appWith(exposed: string[], options: TestAppOptions = {}) {
  const config = (options.config ?? {}) as { services?: { mcp?: Record<string, unknown> } };
  return makeTestApp({
    tools: TOOLS,
    ...options,
    config: {
      ...config,
      services: { ...config.services, mcp: { ...config.services?.mcp, exposed_tools: exposed } },
    },
  });
}

async function connect(app: App, sessionId?: string): Promise<Client> {
  const server = createMcpServer(app, { sessionId });
  const client = new Client({ name: 'test', version: '1.0.0' });
  const [a, b] = InMemoryTransport.createLinkedPair();
  await Promise.all([server.connect(b), client.connect(a)]);
  onTestFinished(async () => {
    await client.close();
    await server.close();
  });
  return client;
}

async function call(client: Client, name: string, args: Record<string, unknown> = {}) {
  const result = (await client.callTool({ name, arguments: args })) as {
    isError?: boolean;
    content: { type: string; text: string }[];
  };
  return { isError: result.isError === true, text: result.content[0].text };
}

async function http(app: App, path: string): Promise<unknown> {
  const response = await createHttpApp(app, { allowNoAuth: true }).request(path);
  expect(response.status).toBe(200);
  return response.json();
}

describe('MCP server', () => {
  it('CFG-31: lists only the exposed tools, with schema and description from the definition', async () => {
    const app = await appWith(['svc_get_workflow_tools_status', 'svc_capabilities']);
    const client = await connect(app);
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name)).toEqual(['svc_get_workflow_tools_status', 'svc_capabilities']);
    const workflow = tools[0];
    expect(workflow.description).toBe(app.tools.get('get_workflow_tools_status')!.description);
    expect(workflow.annotations).toEqual({ readOnlyHint: true });
    expect(workflow.inputSchema).toEqual({
      type: 'object',
      properties: {
        session_id: {
          type: 'string',
          minLength: 1,
          description: 'Session whose mode, phase and agent narrow the set. Omit for the defaults.',
        },
        agent: {
          type: 'string',
          minLength: 1,
          description: 'Agent id whose [agents.<id>.tools] policy applies. Omit for the session agent.',
        },
        mode: {
          type: 'string',
          enum: ['build', 'plan'],
          description: 'Session mode to evaluate instead of the session one.',
        },
      },
      additionalProperties: false,
    });
  });

  it('CFG-31: a listed name that is not an MCP tool is a config error naming it', async () => {
    const app = await appWith(['svc_get_workflow_tools_status', 'svc_no_such_tool']);
    expect(() => createMcpServer(app)).toThrowError(
      expect.objectContaining({
        code: 'config_error',
        message: expect.stringMatching(
          /^services\.mcp\.exposed_tools: no MCP tool named "svc_no_such_tool"; MCP tools are: .*svc_capabilities/,
        ),
      }),
    );
  });

  it('TOOLS-65 / TOOLS-67: answers the HTTP payload for the same session as JSON text', async () => {
    const app = await appWith(['svc_get_workflow_tools_status', 'svc_get_primitive_tools_status']);
    const session = await app.sessions.create({ title: 'bound' });
    const client = await connect(app, session.id);
    for (const [name, route] of [
      ['svc_get_workflow_tools_status', '/v1/workflow-tools'],
      ['svc_get_primitive_tools_status', '/v1/primitive-tools'],
    ]) {
      const bound = await call(client, name);
      expect(bound.isError).toBe(false);
      // No argument: the MCP-bound session.
      expect(JSON.parse(bound.text)).toEqual(await http(app, `${route}?session_id=${session.id}`));
      expect(JSON.parse(bound.text).context.session_id).toBe(session.id);
      // An explicit session_id wins.
      const other = await app.sessions.create({ title: 'other', mode: 'plan' });
      const explicit = await call(client, name, { session_id: other.id });
      expect(JSON.parse(explicit.text)).toEqual(await http(app, `${route}?session_id=${other.id}`));
    }
  });

  it('maps unknown tools and bad input to InvalidParams, failures inside to isError results', async () => {
    const app = await appWith(['svc_get_workflow_tools_status', 'svc_broken_readout']);
    const client = await connect(app);
    await expect(client.callTool({ name: 'svc_nope', arguments: {} })).rejects.toMatchObject({
      code: ErrorCode.InvalidParams,
      message: expect.stringContaining('unknown tool svc_nope'),
    });
    // Defined and with an mcp binding, but not exposed: just as unknown.
    await expect(client.callTool({ name: 'svc_capabilities', arguments: {} })).rejects.toMatchObject({
      code: ErrorCode.InvalidParams,
    });
    await expect(
      client.callTool({ name: 'svc_get_workflow_tools_status', arguments: { mode: 'fast', extra: 1 } }),
    ).rejects.toMatchObject({
      code: ErrorCode.InvalidParams,
      // The one invalid-input format of every surface names the native tool (issue 14).
      message: expect.stringMatching(
        /: get_workflow_tools_status: mode: expected one of .*, received "fast"; unknown field extra$/,
      ),
    });
    const broken = await call(client, 'svc_broken_readout');
    expect(broken).toEqual({ isError: true, text: 'internal: internal error: boom' });
    expect(
      app.memoryLog.records.some((r) => r.message === 'mcp tool failed' && r.tool === 'svc_broken_readout'),
    ).toBe(true);
  });

  it('DASH-68: an unwired provider and a closed gate answer a tool error containing "not available"', async () => {
    const app = await appWith(['svc_unwired_readout', 'svc_operator_cognition_readout']);
    const client = await connect(app);
    const result = await call(client, 'svc_unwired_readout');
    expect(result.isError).toBe(true);
    expect(result.text).toContain('not available');
    expect(result.text).toBe(
      'unavailable: svc_unwired_readout is not available: the readout provider is not wired in this runtime',
    );
  });

  it('COG-14 / COG-13: svc_operator_cognition_readout is offered when stigmergy read tools are enabled', async () => {
    const off = await appWith(['svc_operator_cognition_readout', 'svc_capabilities']);
    const offClient = await connect(off);
    expect((await offClient.listTools()).tools.map((t) => t.name)).toEqual(['svc_capabilities']);
    expect(await call(offClient, 'svc_operator_cognition_readout')).toEqual({
      isError: true,
      text: 'unavailable: svc_operator_cognition_readout is not available: stigmergy read tools are off (options.stigmergy.read_tools)',
    });
    const on = await appWith(['svc_operator_cognition_readout'], {
      config: { options: { stigmergy: { read_tools: true } } },
    });
    const onClient = await connect(on);
    expect((await onClient.listTools()).tools.map((t) => t.name)).toEqual(['svc_operator_cognition_readout']);
    const result = await call(onClient, 'svc_operator_cognition_readout', { zone: 'token_pressure' });
    expect(result.isError).toBe(false);
    expect(maskVolatile(JSON.parse(result.text))).toEqual(
      maskVolatile(await http(on, '/v1/operator-cognition?zone=token_pressure')),
    );
  });

  it('DASH-47: svc_get_multiplayer_coordination_dashboard answers the HTTP JSON', async () => {
    const app = await appWith(['svc_get_multiplayer_coordination_dashboard']);
    const session = await app.sessions.create();
    const client = await connect(app, session.id);
    for (const args of [{}, { session_id: session.id, recent_runs_limit: 2 }]) {
      const result = await call(client, 'svc_get_multiplayer_coordination_dashboard', args);
      expect(result.isError, result.text).toBe(false);
      const query = new URLSearchParams(
        Object.entries(args).map(([k, v]) => [k, String(v)] as [string, string]),
      ).toString();
      expect(maskVolatile(JSON.parse(result.text))).toEqual(
        maskVolatile(await http(app, `/v1/multiplayer-coordination-dashboard${query ? `?${query}` : ''}`)),
      );
    }
  });

  it('OPMODE-42: svc_get_operating_mode is absent unless listed', async () => {
    const app = await appWith(['svc_capabilities'], { config: { options: { operating_packs: true } } });
    expect(app.tools.get('get_operating_mode')).toBeDefined();
    const client = await connect(app);
    expect((await client.listTools()).tools.map((t) => t.name)).toEqual(['svc_capabilities']);
  });

  it('OPMODE-41: svc_get_operating_mode defaults to the MCP-bound session', async () => {
    const app = await appWith(['svc_get_operating_mode'], { config: { options: { operating_packs: true } } });
    const session = await app.sessions.create();
    const other = await app.sessions.create();
    const client = await connect(app, session.id);
    expect((await client.listTools()).tools.map((t) => t.name)).toEqual(['svc_get_operating_mode']);
    const bound = await call(client, 'svc_get_operating_mode');
    expect(bound.isError, bound.text).toBe(false);
    expect(JSON.parse(bound.text)).toMatchObject({
      session_id: session.id,
      enabled: true,
      state: 'enabled_inactive',
    });
    // The same payload as the HTTP route for that session.
    expect(maskVolatile(JSON.parse(bound.text))).toEqual(
      maskVolatile(await http(app, `/v1/session-operating-mode?session_id=${session.id}`)),
    );
    const explicit = await call(client, 'svc_get_operating_mode', { session_id: other.id });
    expect(JSON.parse(explicit.text)).toMatchObject({ session_id: other.id });
  });

  it('OPMODE-43: start-up fails when the tool is listed and options.operating_packs is false', async () => {
    const app = await appWith(['svc_get_operating_mode']);
    expect(() => resolveExposedTools(app, ['svc_get_operating_mode'])).toThrowError(
      'services.mcp.exposed_tools lists svc_get_operating_mode but options.operating_packs is false; set options.operating_packs = true or remove it from the list',
    );
  });

  it('OPMODE-44: start-up fails when the tool is listed and there is no coordinator', async () => {
    // A runtime built without the session pack controller (createApp({ packs: false })).
    const app = await appWith(['svc_get_operating_mode'], {
      config: { options: { operating_packs: true } },
      packs: false,
    });
    expect(() => checkOperatingMode(app)).toThrowError(
      'services.mcp.exposed_tools lists svc_get_operating_mode but there is no coordinator (no session pack controller is wired in this runtime)',
    );
    await expect(startMcpService(app, { transport: 'http', port: 0 })).rejects.toMatchObject({
      code: 'config_error',
    });
    // A controller without the native tool registered is no coordinator either.
    const bare = await makeTestApp({
      config: { options: { operating_packs: true } },
      tools: allTools.filter((t) => t.name !== 'get_operating_mode'),
    });
    expect(() => checkOperatingMode(bare)).toThrowError(
      /there is no coordinator \(the get_operating_mode tool is not registered\)/,
    );
  });

  it('OPMODE-45: start-up fails when the coordinator lacks operating-mode parity', async () => {
    const app = await appWith(['svc_get_operating_mode'], {
      config: { options: { operating_packs: true } },
      ready: false,
    });
    // A controller stub that can mutate packs but serves no snapshot.
    Object.assign(app, { packs: { activate: () => {}, clear: () => {} } });
    await expect(startMcpService(app, { transport: 'http', port: 0 })).rejects.toThrowError(
      'services.mcp.exposed_tools lists svc_get_operating_mode but the coordinator lacks operating-mode parity (no snapshot); remove it from the list',
    );
    expect(app.runtime.ready).toBe(false);
  });

  it('OPMODE-51: an exposed tool whose gate closes afterwards answers a tool error', async () => {
    const app = await appWith(['svc_get_operating_mode'], { config: { options: { operating_packs: true } } });
    const client = await connect(app);
    app.tools.remove((t) => t.name === 'get_operating_mode');
    expect((await client.listTools()).tools).toEqual([]);
    const result = await call(client, 'svc_get_operating_mode');
    expect(result).toEqual({
      isError: true,
      text: 'unavailable: svc_get_operating_mode is not available: not registered',
    });
  });
});

describe('svc service start mcp, streamable HTTP', () => {
  async function httpClient(url: string, token?: string) {
    const client = new Client({ name: 'test', version: '1.0.0' });
    const transport = new StreamableHTTPClientTransport(new URL(url), {
      requestInit: token ? { headers: { authorization: `Bearer ${token}` } } : undefined,
    });
    await client.connect(transport);
    onTestFinished(() => client.close());
    return client;
  }

  it('AUTH-11: --token is enforced; the runtime is a minimal MCP-only server bound to a session', async () => {
    const app = await appWith(['svc_get_workflow_tools_status', 'svc_runtime_features'], { ready: false });
    const service = await startMcpService(app, { transport: 'http', port: 0, token: 'tok-abcdef123' });
    onTestFinished(() => service.close());
    expect(service.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/mcp$/);
    expect(app.runtime).toMatchObject({ ready: true, server: true, mcpOnly: true });
    expect([...app.runtime.surfaces]).toEqual(['mcp']);
    expect((await app.sessions.get(service.sessionId))?.metadata).toEqual({ created_by: 'mcp_server' });

    await expect(httpClient(service.url!)).rejects.toThrow(/authentication required: missing bearer token/);
    await expect(httpClient(service.url!, 'wrong-token-xyz')).rejects.toThrow(
      /authentication required: invalid bearer token/,
    );
    const client = await httpClient(service.url!, 'tok-abcdef123');
    expect((await client.listTools()).tools.map((t) => t.name)).toEqual([
      'svc_get_workflow_tools_status',
      'svc_runtime_features',
    ]);
    const features = JSON.parse((await call(client, 'svc_runtime_features')).text);
    expect(features.features).toMatchObject({ mcp_server: true, minimal_mcp_only: true, http_server: false });
    const status = JSON.parse((await call(client, 'svc_get_workflow_tools_status')).text);
    expect(status.context.session_id).toBe(service.sessionId);
    await service.close();
    await service.closed;
  });

  it('AUTH-11: [services.mcp] token and allow_no_auth, and --auth none', async () => {
    const configured = await makeTestApp({
      config: { services: { mcp: { exposed_tools: ['svc_capabilities'], token: 'cfg-token-123456' } } },
    });
    const a = await startMcpService(configured, { transport: 'http', port: 0 });
    onTestFinished(() => a.close());
    await expect(httpClient(a.url!)).rejects.toThrow(/authentication required/);
    await httpClient(a.url!, 'cfg-token-123456');

    const open = await makeTestApp({
      config: { services: { mcp: { exposed_tools: ['svc_capabilities'], allow_no_auth: true } } },
    });
    const b = await startMcpService(open, { transport: 'http', port: 0 });
    onTestFinished(() => b.close());
    expect(b.warning).toBeUndefined();
    await httpClient(b.url!);

    const none = await makeTestApp({
      config: { services: { mcp: { exposed_tools: ['svc_capabilities'] } } },
    });
    const c = await startMcpService(none, { transport: 'http', port: 0, auth: 'none' });
    onTestFinished(() => c.close());
    await httpClient(c.url!);

    const closed = await makeTestApp({
      config: { services: { mcp: { exposed_tools: ['svc_capabilities'] } } },
    });
    const d = await startMcpService(closed, { transport: 'http', port: 0, auth: 'bearer' });
    onTestFinished(() => d.close());
    expect(d.warning).toContain('every request gets 401 authentication required');
    await expect(httpClient(d.url!)).rejects.toThrow(/authentication required/);

    await expect(
      startMcpService(none, { transport: 'http', port: 0, auth: 'none', token: 'x-123456' }),
    ).rejects.toThrowError(
      '--auth none conflicts with --token: a configured token is always required; drop one of them',
    );
    // --auth none never bypasses a configured token.
    const tokenAndNone = await startMcpService(configured, { transport: 'http', port: 0, auth: 'none' });
    onTestFinished(() => tokenAndNone.close());
    await expect(httpClient(tokenAndNone.url!)).rejects.toThrow(/authentication required/);
    // Unauthenticated access only on a loopback host.
    await expect(
      startMcpService(none, { transport: 'http', port: 0, host: '0.0.0.0', auth: 'none' }),
    ).rejects.toThrowError(/^refusing to listen on 0\.0\.0\.0 without a token/);
  });

  it('with no token, answers only a loopback Host, [::1] included, on /mcp and /healthz (DNS rebinding)', async () => {
    const app = await appWith(['svc_capabilities'], {
      config: { services: { mcp: { allow_no_auth: true } } },
    });
    const service = await startMcpService(app, { transport: 'http', port: 0 });
    onTestFinished(() => service.close());
    const port = new URL(service.url!).port;
    const body = JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'x', version: '1' } },
    });
    let lastBody = '';
    const statusOf = (path: string, host: string) =>
      new Promise<number>((resolvePromise, reject) => {
        const request = httpRequest(new URL(path, service.url!), {
          method: path === '/mcp' ? 'POST' : 'GET',
          headers: {
            'content-type': 'application/json',
            accept: 'application/json, text/event-stream',
            host,
          },
        });
        request.on('response', (response) => {
          lastBody = '';
          response.setEncoding('utf8');
          response.on('data', (chunk: string) => {
            lastBody += chunk;
          });
          response.on('end', () => resolvePromise(response.statusCode ?? 0));
        });
        request.on('error', reject);
        request.end(path === '/mcp' ? body : undefined);
      });
    expect(await statusOf('/mcp', 'evil.example')).toBe(403);
    // This server's token is set with SVC_MCP_TOKEN, not the HTTP service's variable.
    expect(lastBody).toContain('--token or SVC_MCP_TOKEN');
    expect(await statusOf('/healthz', 'evil.example')).toBe(403);
    expect(await statusOf('/healthz', `evil.example:${port}`)).toBe(403);
    for (const host of [`127.0.0.1:${port}`, `localhost:${port}`, `[::1]:${port}`]) {
      expect([host, await statusOf('/mcp', host)]).toEqual([host, 200]);
      expect([host, await statusOf('/healthz', host)]).toEqual([host, 200]);
    }
  });

  it('with a token, /healthz answers any Host (load balancers probe by address)', async () => {
    const app = await appWith(['svc_capabilities']);
    const service = await startMcpService(app, { transport: 'http', port: 0, token: 'tok-abcdef123' });
    onTestFinished(() => service.close());
    const answer = await new Promise<number>((resolvePromise, reject) => {
      const request = httpRequest(new URL('/healthz', service.url!), { headers: { host: '10.0.0.7:80' } });
      request.on('response', (response) => {
        response.resume();
        resolvePromise(response.statusCode ?? 0);
      });
      request.on('error', reject);
      request.end();
    });
    expect(answer).toBe(200);
  });

  it('MCP-HTTP-LIMITS-1: past max_connections a connection is closed unanswered; headers that stop arriving are a 408', async () => {
    const app = await appWith(['svc_capabilities'], {
      config: {
        services: { mcp: { allow_no_auth: true, max_connections: 1, headers_timeout_seconds: 0.5 } },
      },
    });
    const service = await startMcpService(app, { transport: 'http', port: 0 });
    onTestFinished(() => service.close());
    const { port } = new URL(service.url!);
    const answerOf = (socket: Socket, text: string) =>
      new Promise<string>((resolvePromise) => {
        let received = '';
        socket.setTimeout(10_000, () => socket.destroy());
        socket.on('data', (chunk) => {
          received += chunk;
        });
        socket.on('close', () => resolvePromise(received));
        socket.on('error', () => {});
        socket.write(text);
      });
    // The one connection: its headers stop arriving, it is answered 408 (it holds the limit till then).
    const first = netConnect(Number(port), '127.0.0.1');
    await new Promise((resolvePromise) => first.once('connect', resolvePromise));
    const stalled = answerOf(first, 'GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n');
    const second = netConnect(Number(port), '127.0.0.1');
    expect(
      await answerOf(second, 'GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n'),
    ).toBe('');
    expect(await stalled).toMatch(/^HTTP\/1\.1 408 /);
  });

  it('MCP-HTTP-LIMITS-2: a request body past MCP_MAX_BODY_BYTES is a 413, declared or chunked, in a session too', async () => {
    const app = await appWith(['svc_capabilities']);
    const service = await startMcpService(app, { transport: 'http', port: 0, token: 'tok-abcdef123' });
    onTestFinished(() => service.close());
    const headers = {
      authorization: 'Bearer tok-abcdef123',
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
    };
    const big = `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments":{"t":"${'a'.repeat(MCP_MAX_BODY_BYTES)}"}}}`;
    const declared = await fetch(service.url!, { method: 'POST', headers, body: big });
    expect(declared.status).toBe(413);
    expect((await declared.json()).error.message).toContain(`larger than ${MCP_MAX_BODY_BYTES} bytes`);
    const client = new Client({ name: 't', version: '1' });
    const transport = new StreamableHTTPClientTransport(new URL(service.url!), {
      requestInit: { headers: { authorization: 'Bearer tok-abcdef123' } },
    });
    await client.connect(transport);
    onTestFinished(() => client.close());
    const chunked = new ReadableStream<Uint8Array>({
      start(controller) {
        const piece = new TextEncoder().encode('a'.repeat(1024 * 1024));
        controller.enqueue(
          new TextEncoder().encode('{"jsonrpc":"2.0","id":2,"method":"ping","params":{"t":"'),
        );
        for (let i = 0; i < 11; i++) controller.enqueue(piece);
        controller.enqueue(new TextEncoder().encode('"}}'));
        controller.close();
      },
    });
    const inSession = await fetch(service.url!, {
      method: 'POST',
      headers: { ...headers, 'mcp-session-id': transport.sessionId!, 'mcp-protocol-version': '2025-06-18' },
      body: chunked,
      duplex: 'half',
    } as RequestInit);
    expect(inSession.status).toBe(413);
    expect((await client.listTools()).tools.map((t) => t.name)).toContain('svc_capabilities');
  });
});
