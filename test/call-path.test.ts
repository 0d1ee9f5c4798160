/**
 * One call path (issue 14): the same bad input reads the same on every surface. Pins:
 * - a value out of range through HTTP (query), CLI, MCP, the agent, and the TUI (local and
 *   attached) carries one message, `list_sessions: limit: expected at least 1, received 0`; each
 *   surface only wraps it its own way (MCP is an InvalidParams protocol error; the model reads
 *   `invalid_input: …`), and HTTP names a query parameter first, once (spec DASH-58):
 *   `invalid limit: list_sessions: expected at least 1, received 0`;
 * - a value of the wrong type in a JSON body reads the same over HTTP, MCP, the agent and the TUI;
 * - details.issues[] carries { path, expected, received, message } over HTTP and in process;
 * - a malformed `%` escape in a path parameter is 400 invalid_input naming the field, not a 500.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { describe, expect, it } from 'vitest';
import type { App } from '../src/app';
import { createHttpApp } from '../src/surfaces/http/index';
import { createMcpServer } from '../src/surfaces/mcp/server';
import { createHttpClient } from '../src/surfaces/tui/http-client';
import { createLocalClient } from '../src/surfaces/tui/local-client';
import { callTool } from '../src/tools/core/call-tool';
import { agentApp } from './helpers/agent-harness';
import { reply } from './helpers/fake-provider';
import { viaCli } from './helpers/surfaces';

const RANGE = 'list_sessions: limit: expected at least 1, received 0';
/** HTTP names a query parameter first, once (spec DASH-58): the same parts, field first. */
const RANGE_QUERY = 'invalid limit: list_sessions: expected at least 1, received 0';
const TYPE = 'message: text: expected string, received number';

async function mcpError(app: App, mcpName: string, args: Record<string, unknown>): Promise<string> {
  const server = createMcpServer(app, { exposedTools: [mcpName] });
  const client = new Client({ name: 'call-path', version: '1.0.0' });
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  await Promise.all([server.connect(serverSide), client.connect(clientSide)]);
  try {
    await client.callTool({ name: mcpName, arguments: args });
    throw new Error('expected an InvalidParams error');
  } catch (error) {
    return (error as Error).message;
  } finally {
    await client.close();
    await server.close();
  }
}

function attached(app: App) {
  const hono = createHttpApp(app, { token: 't' });
  const fetch = ((url: string, init?: RequestInit) =>
    hono.request(String(url), init)) as typeof globalThis.fetch;
  return { hono, client: createHttpClient({ url: 'http://svc.test', token: 't', fetch }) };
}

const messageOf = async (promise: Promise<unknown>) => {
  try {
    await promise;
  } catch (error) {
    return (error as Error).message;
  }
  throw new Error('expected a failure');
};

describe('one invalid-input message on every surface', () => {
  it('a value out of range: HTTP, CLI, MCP, agent, local and attached TUI', async () => {
    const { app, provider } = await agentApp([
      reply().toolCall('list_sessions', { limit: 0 }),
      reply().text('noted'),
    ]);
    const session = await app.sessions.create({ title: 'call path' });
    const { hono, client } = attached(app);

    const http = await hono.request('/v1/sessions?limit=0', { headers: { authorization: 'Bearer t' } });
    expect(http.status).toBe(400);
    const body = (await http.json()) as { error: { message: string; type: string } };
    expect(body).toEqual({ error: { message: RANGE_QUERY, type: 'invalid_input' } });

    const cli = await viaCli(app, { command: 'session list' }, { limit: 0 });
    expect(cli.code).toBe(2);
    expect(cli.stderr).toBe(`svc: ${RANGE}\n`);

    // The SDK prefixes the code on the wire (McpError) and again in the client's error.
    expect(await mcpError(app, 'svc_list_sessions', { limit: 0 })).toBe(`MCP error -32602: ${RANGE}`);

    const run = await app.agent.run({ prompt: 'list them', sessionId: session.id });
    expect(run.status).toBe('completed');
    const toolMessage = (provider.requests[1].body.messages as { role: string; content: string }[]).find(
      (m) => m.role === 'tool',
    );
    expect(toolMessage?.content).toBe(`invalid_input: ${RANGE}`);

    expect(await messageOf(createLocalClient(app).callTool('list_sessions', { limit: 0 }))).toBe(RANGE);
    expect(await messageOf(client.callTool('list_sessions', { limit: 0 }))).toBe(RANGE_QUERY);
  });

  it('a value of the wrong type in a JSON body: HTTP, MCP, agent, local and attached TUI', async () => {
    const { app, provider } = await agentApp([
      reply().toolCall('message', { action: 'send', text: 7 }),
      reply().text('noted'),
    ]);
    const session = await app.sessions.create({ title: 'call path' });
    const { hono, client } = attached(app);

    const http = await hono.request(`/v1/sessions/${session.id}/messages`, {
      method: 'POST',
      headers: { authorization: 'Bearer t', 'content-type': 'application/json' },
      body: JSON.stringify({ text: 7 }),
    });
    expect(http.status).toBe(400);
    const body = (await http.json()) as { error: { message: string } };
    expect(body.error.message).toBe(TYPE);

    expect(await mcpError(app, 'svc_message', { action: 'send', session_id: session.id, text: 7 })).toBe(
      `MCP error -32602: ${TYPE}`,
    );

    const run = await app.agent.run({ prompt: 'send it', sessionId: session.id });
    expect(run.status).toBe('completed');
    const toolMessage = (provider.requests[1].body.messages as { role: string; content: string }[]).find(
      (m) => m.role === 'tool',
    );
    expect(toolMessage?.content).toBe(`invalid_input: ${TYPE}`);

    const input = { action: 'send', session_id: session.id, text: 7 };
    expect(await messageOf(createLocalClient(app).callTool('message', input))).toBe(TYPE);
    expect(await messageOf(client.callTool('message', input))).toBe(TYPE);
  });

  it('carries the issues as data: path, expected, received, message', async () => {
    const { app } = await agentApp([]);
    const outcome = await callTool(app, 'list_sessions', { limit: 0, roots_only: 'yes' }, { surface: 'tui' });
    expect(outcome.ok).toBe(false);
    if (outcome.ok) return;
    expect(outcome.error.details).toEqual({
      tool: 'list_sessions',
      issues: [
        {
          path: 'limit',
          expected: 'at least 1',
          received: '0',
          message: 'limit: expected at least 1, received 0',
        },
        {
          path: 'roots_only',
          expected: 'boolean',
          received: 'string',
          message: 'roots_only: expected boolean, received string',
        },
      ],
    });
  });
});

describe('path parameters', () => {
  it('answers 400 invalid_input naming the field for a malformed % escape', async () => {
    const { app } = await agentApp([]);
    const { hono } = attached(app);
    const response = await hono.request('/v1/sessions/%ZZ', { headers: { authorization: 'Bearer t' } });
    expect(response.status).toBe(400);
    expect(await response.json()).toEqual({
      error: {
        message: 'get_session: session_id: expected a percent-encoded path segment, received "%ZZ"',
        type: 'invalid_input',
      },
    });
    const ok = await hono.request('/v1/sessions/ses_missing', { headers: { authorization: 'Bearer t' } });
    expect(ok.status).toBe(404);
  });
});
