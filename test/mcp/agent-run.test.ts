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
});
