/**
 * workflow_template and orchestrate_workflow. Pins: TOOLS-56 (save, list, inspect, update and
 * delete are each accepted, with revisions); a definition with a cycle, an unknown recipe or
 * parameter, or a reference to a step that is not a dependency is refused by field; TOOLS-55
 * (orchestrate_workflow registered); through the real loop a template runs its recipe and agent
 * steps as a DAG under the workflow's run (a recipe step is a nested recipe run, an agent step a
 * sub-agent run), with parameters and earlier outputs rendered in.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { invokeTool } from '../../src/tools/core/call-tool';
import { agentApp } from '../helpers/agent-harness';

// orchestrate_workflow mutates (it starts runs): a headless run needs it allowed.
const ALLOW = { extraConfig: { permissions: { allowed_tools: ['orchestrate_workflow'] } } };

import { type RecordedRequest, reply } from '../helpers/fake-provider';
import { makeTestApp } from '../helpers/make-test-app';
import { afterTool, childRuns, lastToolResult, maxConcurrent, promptOf, router } from './helpers';

const PEEK =
  'description = "Look at something"\n[[parameters]]\nname = "what"\nrequired = true\n[[steps]]\nid = "look"\nagent = "explore"\nprompt = "Look at {{ what }}"\n';

const SHIP = {
  description: 'Review, lint, summarize',
  parameters: [{ name: 'target', type: 'string', required: true }],
  steps: [
    { id: 'review', recipe: 'peek', params: { what: '{{ target }}' } },
    { id: 'lint', prompt: 'Lint {{ target }}', agent: 'explore' },
    {
      id: 'summary',
      prompt: 'Summarize: {{ steps.review.output }} / {{ steps.lint.output }}',
      depends_on: ['review', 'lint'],
    },
  ],
};

function withRecipe(workspace: string) {
  mkdirSync(join(workspace, '.svc', 'recipes'), { recursive: true });
  writeFileSync(join(workspace, '.svc', 'recipes', 'peek.toml'), PEEK);
}

describe('workflow_template', () => {
  it('TOOLS-56: accepts save, list, inspect, update and delete', async () => {
    const app = await makeTestApp();
    withRecipe(app.workspace);
    const call = (input: Record<string, unknown>) =>
      invokeTool(app, 'workflow_template', input, { surface: 'cli' }) as Promise<any>;
    const saved = await call({ action: 'save', name: 'ship', ...SHIP });
    expect(saved.template).toMatchObject({
      name: 'ship',
      revision: 1,
      description: 'Review, lint, summarize',
    });
    expect(saved.template.definition.steps[1]).toEqual({
      id: 'lint',
      prompt: 'Lint {{ target }}',
      agent: 'explore',
      depends_on: [],
    });
    await expect(call({ action: 'save', name: 'ship', ...SHIP })).rejects.toThrow(
      'name: workflow template "ship" exists; use action update',
    );

    const list = await call({ action: 'list' });
    expect(list).toMatchObject({
      action: 'list',
      count: 1,
      templates: [{ name: 'ship', steps: 3, parameters: ['target'], revision: 1, last_run: null }],
    });

    const updated = await call({ action: 'update', name: 'ship', description: 'Now with more review' });
    expect(updated.template).toMatchObject({ revision: 2, description: 'Now with more review' });
    expect(updated.template.definition.steps).toHaveLength(3);

    const inspected = await call({ action: 'inspect', name: 'ship' });
    expect(inspected).toMatchObject({ action: 'inspect', template: { name: 'ship', revision: 2 }, runs: [] });

    expect(await call({ action: 'delete', name: 'ship' })).toEqual({
      action: 'delete',
      name: 'ship',
      deleted: true,
    });
    await expect(call({ action: 'inspect', name: 'ship' })).rejects.toThrow(
      'name: no workflow template "ship"; saved: (none)',
    );
    await expect(call({ action: 'inspect' })).rejects.toThrow('name: required for action inspect');
  });

  it('refuses definitions with cycles, unknown recipes, parameters or non-dependency references, by field', async () => {
    const app = await makeTestApp();
    withRecipe(app.workspace);
    const save = (steps: unknown[]) =>
      invokeTool(app, 'workflow_template', { action: 'save', name: 'bad', steps }, { surface: 'cli' });
    await expect(
      save([
        { id: 'a', prompt: 'x', depends_on: ['b'] },
        { id: 'b', prompt: 'y', depends_on: ['a'] },
      ]),
    ).rejects.toThrow('steps: dependency cycle: a → b → a');
    await expect(
      save([
        { id: 'a', recipe: 'nope' },
        { id: 'b', recipe: 'peek', params: { colour: 'red' } },
        { id: 'c', prompt: 'use {{ steps.a.output }} and {{ who }}', agent: 'build' },
      ]),
    ).rejects.toThrow(
      'steps[0].recipe: no recipe "nope"; known: fix-failing-tests, peek, review-changes, write-tests' +
        ` (add ${join(app.workspace, '.svc', 'recipes', 'nope.toml')}); steps[1].params.colour: recipe "peek" has no parameter "colour"; its parameters: what; ` +
        'steps[1].params.what: required by recipe "peek"; steps[2].agent: "build" is a primary agent; steps run as sub-agents (e.g. general, explore); ' +
        'steps[2].prompt: {{ steps.a.output }}: step "a" is not among the steps this one depends on; add it to depends_on; steps[2].prompt: {{ who }}: unknown parameter; parameters: (none)',
    );
    expect(await app.workflows.templates.list()).toEqual([]);
  });

  it('refuses more steps than the cap before checking them', async () => {
    const app = await makeTestApp();
    const steps = Array.from({ length: 10_000 }, (_, i) => ({
      id: `s${i}`,
      prompt: 'x',
      depends_on: i ? [`s${i - 1}`] : [],
    }));
    await expect(
      invokeTool(app, 'workflow_template', { action: 'save', name: 'huge', steps }, { surface: 'cli' }),
    ).rejects.toThrow('workflow_template: steps: expected at most 50 items, received an array of 10000');
    expect(await app.workflows.templates.list()).toEqual([]);
  });
});

describe('orchestrate_workflow', () => {
  it('TOOLS-55: runs a saved template as a DAG of a nested recipe run and sub-agent runs under the workflow run', async () => {
    const answer = (request: RecordedRequest) => {
      const prompt = promptOf(request);
      if (prompt === 'Look at src/app.ts') return reply().text('app.ts wires services').slow(5);
      if (prompt === 'Lint src/app.ts') return reply().text('no lint issues').slow(5);
      if (prompt.startsWith('Summarize:')) return reply().text(`summary of (${prompt.slice(11)})`);
      if (afterTool(request)) return reply().text(`parent: ${lastToolResult(request).split('\n')[0]}`);
      return reply().toolCall('orchestrate_workflow', { name: 'ship', params: { target: 'src/app.ts' } });
    };
    const { app, events } = await agentApp(router(5, answer), ALLOW);
    withRecipe(app.workspace);
    expect(app.tools.get('orchestrate_workflow')?.tag).toBe('workflow');
    await invokeTool(app, 'workflow_template', { action: 'save', name: 'ship', ...SHIP }, { surface: 'cli' });

    const parent = await app.agent.run({ prompt: 'ship it' });
    expect(parent.text).toMatch(/^parent: Workflow ship completed \(workflow_run_id wfr_/);
    const [workflowRun] = await childRuns(app, parent.run_id);
    expect(workflowRun).toMatchObject({
      agent: 'workflow',
      origin: 'workflow',
      status: 'completed',
      family_session_id: parent.session_id,
    });
    const steps = await childRuns(app, workflowRun.id);
    // review is a nested recipe run; lint and summary are sub-agent runs.
    expect(steps.map((r) => [r.agent, r.origin])).toEqual([
      ['recipe', 'workflow'],
      ['explore', 'subagent'],
      ['general', 'subagent'],
    ]);
    const [recipeStep] = await childRuns(app, steps[0].id);
    expect(recipeStep).toMatchObject({
      agent: 'explore',
      origin: 'subagent',
      status: 'completed',
      family_session_id: parent.session_id,
    });
    // review's recipe step and lint overlapped; the summary saw both answers.
    expect(maxConcurrent(events, [recipeStep.id, steps[1].id])).toBe(2);
    expect((await app.agent.result(steps[2].id)).text).toBe(
      'summary of (app.ts wires services / no lint issues)',
    );

    const inspected = (await invokeTool(
      app,
      'workflow_template',
      { action: 'inspect', name: 'ship' },
      { surface: 'cli' },
    )) as any;
    expect(inspected.runs).toMatchObject([{ status: 'completed', run_id: workflowRun.id, revision: 1 }]);
    await expect(
      invokeTool(app, 'orchestrate_workflow', { name: 'ship' }, { surface: 'cli' }),
    ).rejects.toThrow('params.target: required by "ship"');
    await expect(
      invokeTool(app, 'orchestrate_workflow', { name: 'nope' }, { surface: 'cli' }),
    ).rejects.toThrow('name: no workflow template "nope"; saved: ship');
  });
});
