/**
 * The effective tool set is kept per registry state, config and funnel context
 * (src/tools/core/agent-toolbox.ts) instead of running the funnel for every run and step. Pins:
 * what changes that set is still seen by the next run — a tool added to the registry (an MCP
 * server connecting), a config reload (`options.disabled_tools`), a session mode — and a run with a
 * policy not marked stable is asked every time.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse, stringify } from 'smol-toml';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { App } from '../../src/app';
import { stablePolicy } from '../../src/permissions/tool-policy';
import { createAgentToolbox } from '../../src/tools/core/agent-toolbox';
import { defineTool } from '../../src/tools/core/define-tool';
import { agentApp, echoTool } from '../helpers/agent-harness';
import type { FakeProvider } from '../helpers/fake-provider';
import { reply } from '../helpers/fake-provider';

const toolNames = (provider: FakeProvider, i: number) =>
  (provider.requests[i].body.tools as { function: { name: string } }[]).map((t) => t.function.name);

const lateTool = defineTool({
  name: 'late_tool',
  family: 'test',
  tag: 'primitive',
  description: 'A tool that joins after start.',
  input: z.strictObject({}),
  mutates: false,
  run: async () => 'late',
});

function updateConfig(app: App, mutate: (config: Record<string, any>) => void) {
  const path = join(app.workspace, 'svc.toml');
  const config = parse(readFileSync(path, 'utf8')) as Record<string, any>;
  mutate(config);
  writeFileSync(path, stringify(config));
  app.reloadConfig();
}

describe('the effective tool set kept between runs', () => {
  it('ENGINE-COMPAT-1: a tool added to the registry and a config reload are seen by the next run', async () => {
    const { app, provider } = await agentApp(
      [reply().text('one'), reply().text('two'), reply().text('three')],
      { extraTools: [echoTool], extraConfig: { options: { tool_exposure: 'all' } } },
    );
    expect((await app.agent.run({ prompt: 'go', yolo: true })).status).toBe('completed');
    expect(toolNames(provider, 0)).toContain('echo');
    expect(toolNames(provider, 0)).not.toContain('late_tool');

    // An MCP server connecting adds its tools to the registry.
    app.tools.add([lateTool]);
    expect((await app.agent.run({ prompt: 'go', yolo: true })).status).toBe('completed');
    expect(toolNames(provider, 1)).toContain('late_tool');

    updateConfig(app, (config) => {
      config.options.disabled_tools = ['echo'];
    });
    expect((await app.agent.run({ prompt: 'go', yolo: true })).status).toBe('completed');
    expect(toolNames(provider, 2)).not.toContain('echo');
    expect(toolNames(provider, 2)).toContain('late_tool');
  });

  it('ENGINE-COMPAT-1: the same context answers the same set; mode, policy and a policy not marked stable are told apart', async () => {
    const { app } = await agentApp([], { extraTools: [echoTool] });
    const toolbox = createAgentToolbox(app);
    const names = (context: Parameters<typeof toolbox.effective>[0]) =>
      toolbox.effective(context).map((tool) => tool.name);
    const all = names({});
    expect(all).toContain('echo');
    expect(all).toContain('write');
    expect(names({ mode: 'plan' })).not.toContain('write');
    expect(names({})).toEqual(all);

    const noEcho = stablePolicy({
      source: 'test',
      removes: (tool) => (tool.name === 'echo' ? 'no' : undefined),
    });
    expect(names({ policies: [noEcho] })).not.toContain('echo');
    expect(names({ policies: [noEcho] })).toContain('write');

    // A policy not marked stable may answer differently each time: it is asked every time.
    let withhold = false;
    const moving = {
      source: 'moving',
      removes: (tool: { name: string }) => (withhold && tool.name === 'echo' ? 'now' : undefined),
    };
    expect(names({ policies: [moving] })).toContain('echo');
    withhold = true;
    expect(names({ policies: [moving] })).not.toContain('echo');
    expect(names({})).toContain('echo');
  });
});
