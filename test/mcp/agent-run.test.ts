/**
 * The svc agent loop uses the tools of a configured MCP server: the model's call to
 * mcp_<id>_<tool> runs on the server (through the funnel and the permission service) and its
 * result goes back to the model.
 */
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { agentApp } from '../helpers/agent-harness';
import { reply } from '../helpers/fake-provider';

const FIXTURE = resolve(__dirname, '../fixtures/mcp/stdio-server.mjs');
const DEEP_FIXTURE = resolve(__dirname, '../fixtures/mcp/deep-schema-server.mjs');

describe('agent run with an MCP server', () => {
  it('GEN-05/CFG-31 companion: the agent calls a stdio MCP server tool and reads its answer', async () => {
    const { app, provider } = await agentApp(
      [reply().toolCall('mcp_local_echo', { text: 'ping from svc' }), reply().text('The server said pong.')],
      {
        extraConfig: { mcp: { local: { command: process.execPath, args: [FIXTURE] } } },
      },
    );
    const session = await app.agent.createSession({ title: 'mcp' });
    const result = await app.agent.run({ sessionId: session.id, prompt: 'use the echo tool' });
    expect(result.status).toBe('completed');
    const first = provider.requests[0].body as { tools: { function: { name: string } }[] };
    expect(first.tools.map((t) => t.function.name)).toContain('mcp_local_echo');
    const second = JSON.stringify(provider.requests[1].body.messages);
    expect(second).toContain('ping from svc');
    const events = (await app.runs.events(result.run_id)).map((e) => e.type);
    expect(events).toContain('tool.finished');
  });

  it('a mutating MCP tool asks permission, and a deny never reaches the server', async () => {
    const { app, provider } = await agentApp(
      [reply().toolCall('mcp_local_write_note', { text: 'x' }), reply().text('denied, ok')],
      {
        extraConfig: {
          mcp: { local: { command: process.execPath, args: [FIXTURE] } },
          permissions: { unattended: 'fail' },
        },
      },
    );
    const session = await app.agent.createSession({ title: 'mcp-deny' });
    const result = await app.agent.run({ sessionId: session.id, prompt: 'write a note' });
    expect(result.status).toBe('completed');
    expect(JSON.stringify(provider.requests[1].body.messages)).toMatch(
      /permission|not allowed|denied|nobody/i,
    );
  });

  it("a server's tool with a schema 3000 levels deep is skipped; the run and the server's other tools work", async () => {
    const { app, provider } = await agentApp(
      [reply().toolCall('mcp_deep_echo', { text: 'hi' }), reply().text('done')],
      {
        extraConfig: {
          mcp: { deep: { command: process.execPath, args: [DEEP_FIXTURE], trust_annotations: true } },
        },
      },
    );
    app.mcpClients.start();
    await app.mcpClients.settled({ timeoutMs: 15_000 });
    expect(app.mcpClients.status('deep')[0].warnings).toEqual([
      'skipped: tool "deep": inputSchema is nested deeper than 64 levels',
    ]);
    const session = await app.agent.createSession({ title: 'mcp-deep' });
    const result = await app.agent.run({ sessionId: session.id, prompt: 'use the echo tool' });
    expect(result.status).toBe('completed');
    const first = provider.requests[0].body as { tools: { function: { name: string } }[] };
    const names = first.tools.map((t) => t.function.name);
    expect(names).toContain('mcp_deep_echo');
    expect(names).not.toContain('mcp_deep_deep');
    expect(JSON.stringify(provider.requests[1].body.messages)).toContain('called echo');
  });

  it('MCP-CLEAN-4: a tool answer with escape sequences reaches the model and the run events made safe', async () => {
    const { app, provider } = await agentApp(
      [reply().toolCall('mcp_hostile_hostile', {}), reply().text('done')],
      {
        extraConfig: {
          mcp: {
            hostile: {
              command: process.execPath,
              args: [FIXTURE],
              env: { FAKE_MCP_HOSTILE: '1' },
              trust_annotations: true,
            },
          },
        },
      },
    );
    const session = await app.agent.createSession({ title: 'mcp-hostile' });
    const result = await app.agent.run({ sessionId: session.id, prompt: 'use the hostile tool' });
    expect(result.status).toBe('completed');
    const read = JSON.stringify(provider.requests[1].body.messages);
    expect(read).toContain('okredline\\nover\\ntab\\there<U+202E>txt.exe');
    const events = JSON.stringify(await app.runs.events(result.run_id));
    expect(`${read}${events}`).not.toMatch(/\\u001b|\\u0007|[\u0080-\u009f\u202e]/);
  });
});
