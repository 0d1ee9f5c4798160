/**
 * The workflow tag and agentic_fetch. Pins: TOOLS-50 (the workflow-tagged tools are exactly the
 * eight the spec names: this layer's five plus agent, and deploy_agent/deploy_fleet once they
 * exist) and TOOLS-51 (everything else is primitive), as get_workflow_tools_status lists them;
 * sub-agents started by a workflow get no workflow tools; every field of these tools is described
 * for the model; agentic_fetch fetches with the fetch machinery, a sub-agent answers from the
 * page with only fetch, and an agent without fetch cannot use it.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, expect, it, onTestFinished } from 'vitest';
import { z } from 'zod';
import { invokeTool } from '../../src/tools/core/call-tool';
import { recipeTools } from '../../src/tools/recipes';
import { workflowTools } from '../../src/tools/workflow';
import { agentApp } from '../helpers/agent-harness';
import { reply } from '../helpers/fake-provider';
import { makeTestApp } from '../helpers/make-test-app';
import { afterTool, childRuns, promptOf, router, toolResults, toolsOf } from './helpers';

const WORKFLOW_TAGGED = [
  'agent',
  'spawn_agents_on_csv',
  'agentic_fetch',
  'create_team',
  'execute_dag',
  'orchestrate_workflow',
  'deploy_agent',
  'deploy_fleet',
];
const OWNED_HERE = [
  'agent',
  'spawn_agents_on_csv',
  'agentic_fetch',
  'create_team',
  'execute_dag',
  'orchestrate_workflow',
];

describe('workflow tag', () => {
  it('TOOLS-50: get_workflow_tools_status lists the workflow-tagged tools, all of them among the eight', async () => {
    const app = await makeTestApp();
    const status = (await invokeTool(app, 'get_workflow_tools_status', {}, { surface: 'cli' })) as {
      tools: { name: string; tag: string }[];
    };
    const names = status.tools.map((t) => t.name);
    expect(names).toEqual(expect.arrayContaining(OWNED_HERE));
    for (const name of names) expect(WORKFLOW_TAGGED).toContain(name);
    // Once deploy_agent and deploy_fleet are defined, the list is exactly the eight.
    if (names.includes('deploy_agent') && names.includes('deploy_fleet'))
      expect([...names].sort()).toEqual([...WORKFLOW_TAGGED].sort());
  });

  it('TOOLS-51: every other tool is primitive, including workflow_template, get_teams_status and run_recipe', async () => {
    const app = await makeTestApp();
    for (const { tool } of app.tools.gates()) {
      expect([tool.name, tool.tag]).toEqual([
        tool.name,
        WORKFLOW_TAGGED.includes(tool.name) ? 'workflow' : 'primitive',
      ]);
    }
    const primitive = (await invokeTool(app, 'get_primitive_tools_status', {}, { surface: 'cli' })) as {
      tools: { name: string }[];
    };
    expect(primitive.tools.map((t) => t.name)).toEqual(
      expect.arrayContaining([
        'workflow_template',
        'get_teams_status',
        'run_recipe',
        'recipe_list',
        'recipe_validate',
        'analyze_ripple_impact',
        'spawn_worktree_override',
      ]),
    );
  });

  it("a workflow's sub-agents get no workflow tools", async () => {
    const { app, provider } = await agentApp([reply().text('done')]);
    await invokeTool(app, 'execute_dag', { tasks: [{ id: 'only', prompt: 'Task' }] }, { surface: 'cli' });
    const offered = toolsOf(provider.requests[0]);
    expect(offered.length).toBeGreaterThan(5);
    for (const name of WORKFLOW_TAGGED) expect(offered).not.toContain(name);
  });

  it('describes every input field for the model', () => {
    type Schema = {
      description?: string;
      properties?: Record<string, Schema>;
      items?: Schema;
      anyOf?: Schema[];
    };
    const undescribed = (schema: Schema, at: string): string[] =>
      Object.entries(schema.properties ?? {}).flatMap(([key, prop]) => [
        ...(prop.description ? [] : [`${at}.${key}`]),
        ...(prop.items?.properties ? undescribed(prop.items, `${at}.${key}[]`) : []),
      ]);
    for (const tool of [...recipeTools, ...workflowTools]) {
      const schema = z.toJSONSchema(tool.input, { io: 'input', unrepresentable: 'any' }) as Schema;
      expect([tool.name, undescribed(schema, tool.name)]).toEqual([tool.name, []]);
    }
  });
});

async function pageServer(html: string): Promise<string> {
  const server = createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
    res.end(html);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  onTestFinished(() => new Promise<void>((resolve) => server.close(() => resolve())));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}/docs`;
}

describe('agentic_fetch', () => {
  it('fetches the page and a sub-agent with only fetch answers from it', async () => {
    const url = await pageServer(
      '<html><body><h1>Release notes</h1><p>Version 4.2 adds streaming.</p></body></html>',
    );
    const { app, provider } = await agentApp(
      router(3, (request) => {
        if (promptOf(request).startsWith('Answer the question below'))
          return reply().text('4.2 adds streaming ("Version 4.2 adds streaming.")');
        if (afterTool(request)) return reply().text('noted');
        return reply().toolCall('agentic_fetch', { url, prompt: 'What does 4.2 add?' });
      }),
    );
    const parent = await app.agent.run({ prompt: 'check the notes', yolo: true });
    expect(parent.status).toBe('completed');
    const child = provider.requests.find((r) => promptOf(r).startsWith('Answer the question below'))!;
    expect(toolsOf(child)).toEqual(['fetch']);
    expect(promptOf(child)).toContain('Question: What does 4.2 add?');
    expect(promptOf(child)).toContain(`Page: ${url} (HTTP 200, text/html; charset=utf-8)`);
    expect(promptOf(child)).toContain('# Release notes');
    expect(promptOf(child)).toContain('Version 4.2 adds streaming.');
    const [result] = await toolResults(app, parent.session_id);
    expect(result.output).toBe('4.2 adds streaming ("Version 4.2 adds streaming.")');
    const [run] = await childRuns(app, parent.run_id);
    expect(run).toMatchObject({
      origin: 'subagent',
      status: 'completed',
      family_session_id: parent.session_id,
    });
  });

  it('is refused to an agent that does not have fetch', async () => {
    const { app } = await agentApp(
      [reply().toolCall('agentic_fetch', { url: 'http://127.0.0.1:9/x', prompt: 'q' }), reply().text('ok')],
      {
        extraConfig: {
          agents: { offline: { mode: 'primary', tools: { allow: ['agentic_fetch', 'view'] } } },
        },
      },
    );
    const parent = await app.agent.run({ prompt: 'x', agent: 'offline' });
    const [result] = await toolResults(app, parent.session_id);
    expect(result).toMatchObject({
      is_error: true,
      output:
        'forbidden: agentic_fetch: the fetch tool is not available to this agent (withheld by its funnel)',
    });
  });
});
