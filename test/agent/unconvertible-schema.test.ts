/**
 * A tool whose input schema cannot be converted to JSON Schema (here one 3000 levels deep, as a
 * peer or a plugin could give) is left out of what the model sees, and logged; the run goes on
 * with every other tool instead of failing with "Error converting schema to JSON". The tool
 * listing with schemas (`list_tool_capabilities include_schemas`) says its schema was left out and
 * why, instead of failing whole.
 */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createAgentToolbox } from '../../src/tools/core/agent-toolbox';
import { invokeTool } from '../../src/tools/core/call-tool';
import { type AnyTool, defineTool } from '../../src/tools/core/define-tool';
import { agentApp, echoTool } from '../helpers/agent-harness';
import { reply } from '../helpers/fake-provider';

function deepMeta(depth: number): Record<string, unknown> {
  let schema: Record<string, unknown> = { type: 'string' };
  for (let i = 0; i < depth; i++) schema = { type: 'object', properties: { x: schema } };
  return { type: 'object', properties: { d: schema } };
}

const unconvertible = defineTool({
  name: 'deep_tool',
  family: 'test',
  tag: 'primitive',
  description: 'A tool whose schema cannot be converted.',
  input: z.looseObject({}).meta(deepMeta(3000)),
  mutates: false,
  run: async () => 'deep',
}) as AnyTool;

describe('a tool whose input schema cannot be converted', () => {
  it('is left out of the model’s tools (logged) and the run completes', async () => {
    const { app, provider } = await agentApp(
      [reply().toolCall('echo', { text: 'hi' }), reply().text('done')],
      { extraTools: [echoTool, unconvertible] },
    );
    const warnings: { message: string; fields?: Record<string, unknown> }[] = [];
    const warn = app.log.warn.bind(app.log);
    app.log.warn = (message, fields) => {
      warnings.push({ message, fields });
      warn(message, fields);
    };
    const session = await app.agent.createSession({ title: 'deep' });
    const result = await app.agent.run({ sessionId: session.id, prompt: 'echo hi' });
    expect(result.status).toBe('completed');
    // Neither among the tools sent nor in the listing of the others.
    const sent = JSON.stringify(provider.requests[0].body);
    expect(sent).toContain('"view"');
    expect(sent).not.toContain('deep_tool');
    expect(JSON.stringify(provider.requests[1].body.messages)).toContain('echo: hi');
    expect(warnings).toContainEqual({
      message: 'tool left out: its input schema cannot be converted to JSON Schema',
      fields: expect.objectContaining({ tool: 'deep_tool' }),
    });
    const toolbox = createAgentToolbox(app);
    expect(toolbox.get('deep_tool')).toBeUndefined();
    expect(toolbox.registered().map((s) => s.name)).not.toContain('deep_tool');
  });

  it('MCP-CLEAN-6: list_tool_capabilities include_schemas shows the schema left out and why, and lists the rest', async () => {
    const { app } = await agentApp([], { extraTools: [echoTool, unconvertible] });
    const listing = (await invokeTool(
      app,
      'list_tool_capabilities',
      { include_schemas: true },
      { surface: 'cli' },
    )) as { tools: { name: string; input_schema: unknown; input_schema_error?: string }[] };
    const byName = new Map(listing.tools.map((t) => [t.name, t]));
    expect(byName.get('deep_tool')).toMatchObject({
      input_schema: null,
      input_schema_error: expect.stringMatching(/^left out: it cannot be converted to JSON Schema \(.+\)$/),
    });
    expect(byName.get('echo')).toMatchObject({ input_schema: { type: 'object' } });
    expect(byName.get('echo')).not.toHaveProperty('input_schema_error');
  });
});
