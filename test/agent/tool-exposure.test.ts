/**
 * Tool exposure (src/agent/tool-exposure.ts, options.tool_exposure). Pins:
 * - deferred: the request carries the core tools (and MCP tools) with schemas; the other
 *   effective tools are listed by name in the system prompt, stay callable, and are sent in full
 *   once called;
 * - all: every effective tool is sent;
 * - auto: all when the schemas fit in a tenth of the window, deferred when the core tools do, else
 *   (and with no known window) essential: the essential tools in full, the rest by name;
 * - the funnel report is untouched (a deferred tool is still in the effective set).
 */
import { describe, expect, it } from 'vitest';
import { invokeTool } from '../../src/tools/core/call-tool';
import { agentApp, echoTool } from '../helpers/agent-harness';
import type { FakeProvider } from '../helpers/fake-provider';
import { reply } from '../helpers/fake-provider';

const toolNames = (provider: FakeProvider, i: number) =>
  (provider.requests[i].body.tools as { function: { name: string } }[]).map((t) => t.function.name);
const systemOf = (provider: FakeProvider, i: number) =>
  (provider.requests[i].body.messages as { role: string; content: string }[])[0].content;

describe('tool exposure', () => {
  it('deferred: core tools in full, the rest listed, callable by name, then sent in full', async () => {
    const { app, provider } = await agentApp(
      [
        reply().toolCall('get_session_posture_status', {}),
        reply().toolCall('echo', { text: 'hi' }),
        reply().text('done'),
      ],
      { extraTools: [echoTool], extraConfig: { options: { tool_exposure: 'deferred' } } },
    );
    const result = await app.agent.run({ prompt: 'go', yolo: true });
    expect(result.status).toBe('completed');
    const first = toolNames(provider, 0);
    for (const core of [
      'view',
      'edit',
      'write',
      'bash',
      'grep',
      'glob',
      'todos',
      'agent',
      'checkpoint_create',
    ])
      expect(first).toContain(core);
    expect(first).not.toContain('echo');
    expect(first).not.toContain('get_multiplayer_coordination_dashboard');
    expect(first.length).toBeLessThan(40);
    const system = systemOf(provider, 0);
    expect(system).toContain('# More tools');
    expect(system).toMatch(/^- echo: Echo/m);
    expect(system).toMatch(/^- get_session_posture_status: /m);
    expect(system).not.toMatch(/^- view: /m);
    // Called by name, it ran (its result went back to the model) and is sent in full afterwards.
    const messages = provider.requests[1].body.messages as { role: string; content: string }[];
    expect(messages.at(-1)?.role).toBe('tool');
    expect(messages.at(-1)?.content).not.toMatch(/not available|unknown tool|NoSuchTool/i);
    expect(toolNames(provider, 1)).toContain('get_session_posture_status');
    expect(toolNames(provider, 2)).toEqual(expect.arrayContaining(['get_session_posture_status', 'echo']));
    // The funnel still reports the deferred tools as in the effective set.
    const report = (await invokeTool(app, 'get_primitive_tools_status', {}, { surface: 'agent' })) as {
      tools: { name: string; effective: boolean }[];
    };
    expect(report.tools.find((t) => t.name === 'echo')?.effective).toBe(true);
  });

  it('deferred: a call with a bad input gets the field errors and the full schema next step', async () => {
    const { app, provider } = await agentApp(
      [
        reply().toolCall('echo', { wrong: 1 }),
        reply().toolCall('echo', { text: 'hi' }),
        reply().text('done'),
      ],
      { extraTools: [echoTool], extraConfig: { options: { tool_exposure: 'deferred' } } },
    );
    const result = await app.agent.run({ prompt: 'go', yolo: true });
    expect(result.status).toBe('completed');
    expect(toolNames(provider, 0)).not.toContain('echo');
    const error = (provider.requests[1].body.messages as { role: string; content: string }[]).at(-1);
    expect(error?.role).toBe('tool');
    expect(error?.content).toMatch(/text/);
    expect(toolNames(provider, 1)).toContain('echo');
    const done = (provider.requests[2].body.messages as { role: string; content: string }[]).at(-1);
    expect(done?.content).toContain('hi');
  });

  it('all: every effective tool is sent and nothing is listed', async () => {
    const { app, provider } = await agentApp([reply().text('done')], {
      extraTools: [echoTool],
      extraConfig: { options: { tool_exposure: 'all' } },
      modelInfo: { context_window: 1000 },
    });
    await app.agent.run({ prompt: 'go' });
    expect(toolNames(provider, 0)).toContain('echo');
    expect(toolNames(provider, 0).length).toBeGreaterThan(80);
    expect(systemOf(provider, 0)).not.toContain('# More tools');
  });

  it('auto: all against a large window, deferred against a mid one, essential against a small or unknown one', async () => {
    const large = await agentApp([reply().text('done')], {
      extraTools: [echoTool],
      modelInfo: { context_window: 2_000_000 },
    });
    await large.app.agent.run({ prompt: 'go' });
    expect(toolNames(large.provider, 0)).toContain('echo');
    expect(systemOf(large.provider, 0)).not.toContain('# More tools');

    const mid = await agentApp([reply().text('done')], {
      extraTools: [echoTool],
      modelInfo: { context_window: 128_000 },
    });
    await mid.app.agent.run({ prompt: 'go' });
    expect(toolNames(mid.provider, 0)).toEqual(
      expect.arrayContaining(['view', 'agent', 'checkpoint_create']),
    );
    expect(toolNames(mid.provider, 0)).not.toContain('echo');
    expect(systemOf(mid.provider, 0)).toMatch(/^- echo: Echo/m);

    for (const info of [{ context_window: 32_000 }, undefined]) {
      const small = await agentApp([reply().text('done')], { extraTools: [echoTool], modelInfo: info });
      await small.app.agent.run({ prompt: 'go' });
      const sent = toolNames(small.provider, 0);
      expect(sent).toEqual(expect.arrayContaining(['view', 'write', 'edit', 'bash', 'grep']));
      expect(sent).toContain('agent');
      expect(sent).not.toContain('checkpoint_create');
      expect(sent).not.toContain('echo');
      const system = systemOf(small.provider, 0);
      expect(system).toContain('# More tools');
      expect(system).not.toMatch(/^- echo: /m);
      expect(system).toMatch(/(^|, )echo(, |$)/m);
    }
  });
});
