/**
 * MCP server tools as a model sees and calls them, through the real AI SDK and the scripted fake
 * provider: a stdio server's tool and an OAuth-protected HTTP server's tool in one run. Pins:
 * - the effective tool set (funnel) carries mcp_<id>_<tool> with the remote JSON Schema, which is
 *   what the provider request advertises;
 * - the model's calls run on the MCP servers and their results go back to the model.
 * (The svc agent loop drives the same registry; this test stands in until it lands.)
 */
import { resolve } from 'node:path';
import { generateText, stepCountIs, tool } from 'ai';
import { describe, expect, it } from 'vitest';
import { effectiveTools } from '../../src/tools/core/funnel';
import { approveInBrowser, fakeMcpHttpServer } from '../helpers/fake-mcp-server';
import { fakeProvider, reply } from '../helpers/fake-provider';
import { makeTestApp } from '../helpers/make-test-app';

const FIXTURE = resolve(__dirname, '../fixtures/mcp/stdio-server.mjs');

describe('MCP tools through a model run', () => {
  it('a model calls a stdio server tool and an OAuth-protected HTTP server tool in one run', async () => {
    const secure = await fakeMcpHttpServer({ oauth: true });
    const provider = await fakeProvider([
      reply().toolCall('mcp_local_echo', { text: 'hi' }).toolCall('mcp_secure_ping', { who: 'svc' }),
      reply().text('Both servers answered.'),
    ]);
    const app = await makeTestApp({
      config: {
        providers: { fake: { type: 'openai-compat', base_url: provider.url, api_key: 'test-key-000000' } },
        models: { large: 'fake/m1' },
        mcp: {
          local: { command: process.execPath, args: [FIXTURE] },
          secure: { type: 'http', url: secure.url, auth: 'oauth' },
        },
      },
    });
    await app.mcpClients.authorize('secure', {
      signal: AbortSignal.timeout(10_000),
      onAuthorizationUrl: (url) => {
        void approveInBrowser(url.href);
      },
    });
    app.mcpClients.start();
    await app.mcpClients.settled({ timeoutMs: 15_000 });

    const mcpTools = effectiveTools(app.tools, app.config).filter((t) => t.family.startsWith('mcp:'));
    expect(mcpTools.map((t) => t.name).sort()).toEqual([
      'mcp_local_crash',
      'mcp_local_echo',
      'mcp_local_fail',
      'mcp_local_grow',
      'mcp_local_slow',
      'mcp_local_whoami',
      'mcp_local_write_note',
      'mcp_secure_ping',
    ]);
    const tools = Object.fromEntries(
      mcpTools.map((t) => [
        t.name,
        tool({
          description: t.description,
          inputSchema: t.input,
          execute: async (input) =>
            t.toModelOutput!(
              await t.run(app.toolContext({ surface: 'agent' }), input as Record<string, unknown>),
            ),
        }),
      ]),
    );
    const model = await app.models.resolve();
    const result = await generateText({
      model: model.language_model,
      prompt: 'Ask both servers.',
      tools,
      stopWhen: stepCountIs(3),
    });

    expect(result.text).toBe('Both servers answered.');
    const advertised = provider.requests[0].body.tools as {
      function: { name: string; parameters: unknown };
    }[];
    expect(advertised.find((t) => t.function.name === 'mcp_local_echo')?.function.parameters).toMatchObject({
      type: 'object',
      properties: { text: { type: 'string', description: 'what to echo' } },
      required: ['text'],
    });
    const toolMessages = (provider.requests[1].body.messages as { role: string; content: unknown }[]).filter(
      (m) => m.role === 'tool',
    );
    expect(JSON.stringify(toolMessages)).toContain('echo: hi');
    expect(JSON.stringify(toolMessages)).toContain('pong svc');
    expect(secure.calls).toMatchObject([
      { tool: 'ping', args: { who: 'svc' }, authorization: expect.stringMatching(/^Bearer at_/) },
    ]);
  });
});
