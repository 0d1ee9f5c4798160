/**
 * The tools each step may call (src/agent/run-stream.ts). Pins: with every registered tool in the
 * effective set, every one is sent and callable; a tool the funnel withholds
 * (options.disabled_tools) is neither sent nor run — a call of it is a tool error the model
 * reads, and the run goes on.
 */
import { describe, expect, it } from 'vitest';
import { agentApp, echoTool } from '../helpers/agent-harness';
import type { FakeProvider } from '../helpers/fake-provider';
import { reply } from '../helpers/fake-provider';

const toolNames = (provider: FakeProvider, i: number) =>
  (provider.requests[i].body.tools as { function: { name: string } }[]).map((t) => t.function.name);

describe('active tools of a step', () => {
  it('sends and runs every tool when all of them are effective', async () => {
    const { app, provider } = await agentApp(
      [reply().toolCall('echo', { text: 'hi' }), reply().text('done')],
      { extraTools: [echoTool], extraConfig: { options: { tool_exposure: 'all' } } },
    );
    const result = await app.agent.run({ prompt: 'go', yolo: true });
    expect(result.status).toBe('completed');
    const sent = toolNames(provider, 0);
    expect(sent).toContain('echo');
    expect(new Set(sent).size).toBe(sent.length);
    expect(toolNames(provider, 1)).toEqual(sent);
    const messages = await app.sessions.messages(result.session_id);
    expect(messages[2].parts).toMatchObject([
      { type: 'tool-result', tool: 'echo', output: 'echo: hi', is_error: false },
    ]);
  });

  it('neither sends nor runs a tool the funnel withholds', async () => {
    const { app, provider } = await agentApp(
      [reply().toolCall('echo', { text: 'hi' }), reply().text('done')],
      {
        extraTools: [echoTool],
        extraConfig: { options: { tool_exposure: 'all', disabled_tools: ['echo'] } },
      },
    );
    const result = await app.agent.run({ prompt: 'go', yolo: true });
    expect(result.status).toBe('completed');
    expect(toolNames(provider, 0)).not.toContain('echo');
    expect(toolNames(provider, 0).length).toBeGreaterThan(10);
    const messages = await app.sessions.messages(result.session_id);
    const results = messages.flatMap((m) => m.parts).filter((p) => p.type === 'tool-result');
    expect(results).toMatchObject([{ tool: 'echo', is_error: true }]);
    expect(JSON.stringify(results)).not.toContain('echo: hi');
  });
});
