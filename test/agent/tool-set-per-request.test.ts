/**
 * Work a run did per request that depends only on its tool set (issue 17 item 3, p-sqlcompat):
 * the registered tools' specs, the list of deferred tools and the tool tokens that choose the
 * exposure level are now made once per tool list and kept while it stays. Pins: the same list
 * answers the same array without walking the tools again, and a changed registry or another
 * level, list or window gets its own answer at once; a run still sends the same tools and
 * listing.
 */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { deferredSpecs, exposureLevel, sentInFull, toolTokens } from '../../src/agent/tool-exposure';
import type { AgentToolSpec } from '../../src/agent/toolbox';
import { createAgentToolbox } from '../../src/tools/core/agent-toolbox';
import { defineTool } from '../../src/tools/core/define-tool';
import { agentApp, echoTool } from '../helpers/agent-harness';
import type { FakeProvider } from '../helpers/fake-provider';
import { reply } from '../helpers/fake-provider';

const spec = (name: string, family = 'test'): AgentToolSpec => ({
  name,
  family,
  description: `${name} does one thing. ${'More words. '.repeat(20)}`,
  inputSchema: { type: 'object', properties: { a: { type: 'string' } } },
});

/** `list` frozen behind a proxy that counts its element reads (what walking it costs). */
function counted(list: AgentToolSpec[]) {
  const reads = { n: 0 };
  const frozen = Object.freeze([...list]);
  const proxy = new Proxy(frozen, {
    get(target, key, receiver) {
      if (typeof key === 'string' && /^\d+$/.test(key)) reads.n++;
      return Reflect.get(target, key, receiver);
    },
  });
  return { list: proxy as readonly AgentToolSpec[], reads };
}

const lateTool = defineTool({
  name: 'late_tool',
  family: 'test',
  tag: 'primitive',
  description: 'A tool that joins after start.',
  input: z.strictObject({}),
  mutates: false,
  run: async () => 'late',
});

const sentTools = (provider: FakeProvider, i: number) =>
  (provider.requests[i].body.tools as { function: { name: string } }[]).map((t) => t.function.name);

describe('a run’s tool-set work kept per tool list', () => {
  it('COMPAT-PERF-60: the toolbox answers one registered list per registry state, a new one once the registry changes', async () => {
    const { app } = await agentApp([], { extraTools: [echoTool] });
    let calls = 0;
    const registered = app.tools.registered.bind(app.tools);
    app.tools.registered = () => {
      calls++;
      return registered();
    };
    const toolbox = createAgentToolbox(app);
    const first = toolbox.registered();
    expect(first.map((t) => t.name)).toContain('echo');
    expect(Object.isFrozen(first)).toBe(true);
    // The next runs of the same registry: the same array, the registry not asked again.
    expect(toolbox.registered()).toBe(first);
    expect(createAgentToolbox(app).registered()).toBe(first);
    expect(calls).toBe(1);
    // An MCP server connecting: its tools are in the next answer.
    app.tools.add([lateTool]);
    const after = toolbox.registered();
    expect(after).not.toBe(first);
    expect(after.map((t) => t.name)).toContain('late_tool');
    expect(after.filter((t) => t.name !== 'late_tool')).toEqual([...first]);
    app.tools.remove((tool) => tool.name === 'late_tool');
    expect(toolbox.registered().map((t) => t.name)).not.toContain('late_tool');
  });

  it('COMPAT-PERF-61: the deferred tools of a kept list and level are made once, in order, as `sentInFull` says', () => {
    const tools = [spec('view', 'core-files'), spec('cpu61_a'), spec('bash', 'core-shell'), spec('cpu61_b')];
    const { list, reads } = counted(tools);
    const essential = deferredSpecs(list, 'essential');
    expect(essential.map((t) => t.name)).toEqual(['cpu61_a', 'cpu61_b']);
    expect(essential).toEqual(tools.filter((t) => !sentInFull(t, 'essential')));
    const walked = reads.n;
    expect(walked).toBeGreaterThan(0);
    // Every later run of the same list and level: the same array, the list not walked again.
    expect(deferredSpecs(list, 'essential')).toBe(essential);
    expect(reads.n).toBe(walked);
    // Another level is its own list.
    const deferred = deferredSpecs(list, 'deferred');
    expect(deferred.map((t) => t.name)).toEqual(['cpu61_a', 'cpu61_b']);
    expect(deferred).not.toBe(essential);
    expect(deferredSpecs(list, 'all')).toEqual([]);
    // A list that is not frozen (an effective set not kept): walked each time, never kept by it.
    const open = [...tools];
    const once = deferredSpecs(open, 'essential');
    open.push(spec('cpu61_c'));
    expect(deferredSpecs(open, 'essential').map((t) => t.name)).toEqual(['cpu61_a', 'cpu61_b', 'cpu61_c']);
    expect(once.map((t) => t.name)).toEqual(['cpu61_a', 'cpu61_b']);
  });

  it('COMPAT-PERF-62: the exposure level of a kept list sums its tokens once; the window still decides each time', () => {
    const tools = [spec('view', 'core-files'), spec('cpu62_a'), spec('cpu62_b')];
    const all = tools.reduce((sum, t) => sum + toolTokens(t), 0);
    const core = toolTokens(tools[0]);
    const { list, reads } = counted(tools);
    // Budget = a tenth of the window.
    expect(exposureLevel('auto', list, all * 10)).toBe('all');
    const walked = reads.n;
    expect(walked).toBeGreaterThan(0);
    expect(exposureLevel('auto', list, all * 10)).toBe('all');
    expect(exposureLevel('auto', list, (all - 1) * 10)).toBe('deferred');
    const afterCore = reads.n;
    expect(exposureLevel('auto', list, core * 10)).toBe('deferred');
    expect(exposureLevel('auto', list, (core - 1) * 10)).toBe('essential');
    expect(exposureLevel('auto', list, 0)).toBe('essential');
    // Sums made once: the first for all tools, the core tools' once they were needed.
    expect(reads.n).toBe(afterCore);
    expect(exposureLevel('all', list, 1)).toBe('all');
    expect(exposureLevel('deferred', list, 1)).toBe('deferred');
    expect(reads.n).toBe(afterCore);
  });

  it('COMPAT-PERF-63: runs on a kept tool set still send the core tools and list the others, also after a tool joins', async () => {
    const { app, provider } = await agentApp(
      [reply().text('one'), reply().text('two'), reply().text('three')],
      {
        extraTools: [echoTool],
        extraConfig: { options: { tool_exposure: 'deferred' } },
      },
    );
    for (let i = 0; i < 2; i++)
      expect((await app.agent.run({ prompt: 'go', yolo: true })).status).toBe('completed');
    expect(sentTools(provider, 1)).toEqual(sentTools(provider, 0));
    expect(sentTools(provider, 0)).toContain('view');
    expect(sentTools(provider, 0)).not.toContain('echo');
    const system = (i: number) =>
      (provider.requests[i].body.messages as { role: string; content: string }[]).find(
        (m) => m.role === 'system',
      )?.content ?? '';
    expect(system(0)).toContain('- echo: ');
    expect(system(1)).toBe(system(0));
    app.tools.add([lateTool]);
    expect((await app.agent.run({ prompt: 'go', yolo: true })).status).toBe('completed');
    expect(system(2)).toContain('- late_tool: A tool that joins after start');
    expect(sentTools(provider, 2)).toEqual(sentTools(provider, 0));
  });
});
