/**
 * Recipes. Pins: the planning tools are registered and run_recipe is primitive (TOOLS-42, 53);
 * recipe_list merges workspace, user and built-in recipes (workspace wins); recipe_validate lists
 * problems by field; run_recipe through the real loop runs each step as a sub-agent of the
 * recipe's pipeline run (parent run = the calling run, one family), renders parameters and earlier
 * outputs into prompts, narrows tools within the caller's ceiling, retries a step whose expect
 * check fails, stops at a failing step, and refuses bad parameters by name.
 */
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { invokeTool } from '../../src/tools/core/call-tool';
import { agentApp } from '../helpers/agent-harness';
import { reply } from '../helpers/fake-provider';
import { makeTestApp } from '../helpers/make-test-app';
import { childRuns, promptOf, toolResults, toolsOf } from './helpers';

const MAKE_FILE = `
description = "Create a file, then report on it"
max_turns = 5

[[parameters]]
name = "file"
type = "string"
required = true

[[parameters]]
name = "tone"
type = "string"
default = "dry"
choices = ["dry", "warm"]

[[steps]]
id = "make"
tools = ["write", "view"]
prompt = "Create {{ file }} containing hello."

[[steps.expect]]
command = "test -f {{ file }}"

[[steps]]
id = "report"
agent = "explore"
prompt = "In a {{ tone }} tone, report on: {{ steps.make.output }}"
`;

function writeRecipe(workspace: string, name: string, text: string) {
  mkdirSync(join(workspace, '.svc', 'recipes'), { recursive: true });
  writeFileSync(join(workspace, '.svc', 'recipes', `${name}.toml`), text);
}

describe('recipes', () => {
  it('TOOLS-42: the staged-workflow and planning tools of this layer are registered', async () => {
    const app = await makeTestApp();
    const names = app.tools.registered().map((t) => t.name);
    for (const name of [
      'run_recipe',
      'recipe_list',
      'recipe_validate',
      'analyze_ripple_impact',
      'spawn_worktree_override',
    ]) {
      expect(names).toContain(name);
    }
  });

  it('TOOLS-53: run_recipe is tagged primitive and listed by get_primitive_tools_status', async () => {
    const app = await makeTestApp();
    const primitive = (await invokeTool(app, 'get_primitive_tools_status', {}, { surface: 'cli' })) as {
      tools: { name: string }[];
    };
    expect(primitive.tools.map((t) => t.name)).toEqual(
      expect.arrayContaining(['run_recipe', 'summarize_session']),
    );
    expect(app.tools.require('run_recipe').tag).toBe('primitive');
  });

  it('recipe_list merges workspace, user and built-in recipes; the workspace one wins', async () => {
    const app = await makeTestApp();
    writeRecipe(
      app.workspace,
      'review-changes',
      'description = "my review"\n[[steps]]\nid = "a"\nprompt = "review"\n',
    );
    writeRecipe(app.workspace, 'broken', 'description = "x"\nsteps = 3\n');
    const userDir = join(app.env.XDG_CONFIG_HOME!, 'svc', 'recipes');
    mkdirSync(userDir, { recursive: true });
    writeFileSync(
      join(userDir, 'mine.toml'),
      'description = "user recipe"\n[[steps]]\nid = "one"\nprompt = "go"\n',
    );
    const result = (await invokeTool(app, 'recipe_list', {}, { surface: 'cli' })) as {
      recipes: { name: string; source: string; valid: boolean; shadows: string[]; description: string }[];
    };
    const byName = Object.fromEntries(result.recipes.map((r) => [r.name, r]));
    expect(Object.keys(byName)).toEqual([
      'broken',
      'fix-failing-tests',
      'mine',
      'review-changes',
      'write-tests',
    ]);
    expect(byName['review-changes']).toMatchObject({
      source: 'workspace',
      description: 'my review',
      shadows: ['builtin'],
    });
    expect(byName.mine).toMatchObject({ source: 'user', valid: true });
    expect(byName.broken.valid).toBe(false);
    expect(byName['write-tests']).toMatchObject({ source: 'builtin', valid: true });
    expect(byName['fix-failing-tests'].valid).toBe(true);
  });

  it('recipe_validate reports every problem by field', async () => {
    const app = await makeTestApp();
    const bad = `
description = "bad"
colour = "red"

[[parameters]]
name = "count"
type = "number"
default = "three"

[[steps]]
id = "first"
agent = "nobody"
prompt = "Use {{ steps.second.output }} and {{ missing }}"
tools = ["write", "teleport", "execute_dag"]

[[steps]]
id = "first"
agent = "build"
prompt = "again"

[[steps.expect]]
command = "make {{ steps.first.output }}"
`;
    const result = (await invokeTool(app, 'recipe_validate', { content: bad }, { surface: 'cli' })) as {
      valid: boolean;
      diagnostics: { severity: string; field: string; message: string }[];
    };
    // Schema problems come first: an unknown key stops the semantic check.
    expect(result.valid).toBe(false);
    expect(result.diagnostics).toEqual([
      { severity: 'error', field: 'colour', message: 'unknown key colour' },
    ]);

    const semantic = (await invokeTool(
      app,
      'recipe_validate',
      { content: bad.replace('colour = "red"\n', '') },
      { surface: 'cli' },
    )) as typeof result;
    expect(semantic.valid).toBe(false);
    const byField = semantic.diagnostics.map((d) => [d.field, d.message]);
    expect(byField).toEqual([
      ['parameters[0].default', 'is a string but the parameter type is number'],
      ['steps[0].agent', expect.stringContaining('no agent kind "nobody"')],
      ['steps[0].tools[1]', expect.stringContaining('unknown tool "teleport"')],
      ['steps[0].tools[2]', expect.stringContaining('"execute_dag" is a workflow tool')],
      ['steps[0].prompt', expect.stringContaining('{{ steps.second.output }}: no step "second"')],
      ['steps[0].prompt', expect.stringContaining('{{ missing }}: unknown reference')],
      ['steps[1].id', 'duplicate step id "first"'],
      ['steps[1].agent', expect.stringContaining('"build" is a primary agent')],
      ['steps[1].expect[0].command', expect.stringContaining('{{ steps.first.output }}: unknown parameter')],
    ]);

    const toml = (await invokeTool(
      app,
      'recipe_validate',
      { content: 'description = \n' },
      { surface: 'cli' },
    )) as typeof result;
    expect(toml.diagnostics[0]).toMatchObject({
      field: 'file',
      message: expect.stringMatching(/^not valid TOML \(line 1/),
    });

    const good = (await invokeTool(
      app,
      'recipe_validate',
      { content: MAKE_FILE },
      { surface: 'cli' },
    )) as typeof result;
    expect(good).toMatchObject({ valid: true, diagnostics: [] });
    await expect(invokeTool(app, 'recipe_validate', {}, { surface: 'cli' })).rejects.toThrow(
      /give exactly one of name \(a known recipe\), path/,
    );
  });

  it('run_recipe runs each step as a child run of the recipe run, in the caller family, with rendered prompts', async () => {
    const { app, provider } = await agentApp([
      reply().toolCall('run_recipe', { name: 'make-file', params: { file: 'out.txt' } }),
      // step make: write the file, then answer
      reply().toolCall('write', { path: 'out.txt', content: 'hello\n' }),
      reply().text('made out.txt'),
      // step report
      reply().text('out.txt exists, and it says hello'),
      // the parent reads the tool result
      reply().text('The recipe finished.'),
    ]);
    writeRecipe(app.workspace, 'make-file', MAKE_FILE);
    const parent = await app.agent.run({ prompt: 'run the make-file recipe', yolo: true });
    expect(parent).toMatchObject({ status: 'completed', text: 'The recipe finished.' });
    expect(existsSync(join(app.workspace, 'out.txt'))).toBe(true);

    // Prompts: parameters and the earlier step's output are rendered in.
    expect(promptOf(provider.requests[1])).toBe('Create out.txt containing hello.');
    expect(toolsOf(provider.requests[1])).toEqual(['view', 'write']);
    expect(promptOf(provider.requests[3])).toBe('In a dry tone, report on: made out.txt');

    // Lineage: parent run → recipe pipeline run → one run per step; one family.
    const [recipeRun] = await childRuns(app, parent.run_id);
    expect(recipeRun).toMatchObject({
      origin: 'workflow',
      agent: 'recipe',
      status: 'completed',
      family_session_id: parent.session_id,
    });
    const steps = await childRuns(app, recipeRun.id);
    expect(steps.map((r) => [r.agent, r.origin, r.status, r.family_session_id])).toEqual([
      ['general', 'subagent', 'completed', parent.session_id],
      ['explore', 'subagent', 'completed', parent.session_id],
    ]);
    const recipeSession = await app.sessions.require(recipeRun.session_id);
    expect(recipeSession.parent_id).toBe(parent.session_id);
    expect(
      await Promise.all(steps.map(async (r) => (await app.sessions.require(r.session_id)).parent_id)),
    ).toEqual([recipeSession.id, recipeSession.id]);
    const family = (await app.runs.list({ family_session_id: parent.session_id })).map((r) => r.id);
    expect(family).toEqual(expect.arrayContaining([parent.run_id, recipeRun.id, ...steps.map((s) => s.id)]));

    // The tool result the parent read, and the durable workflow row.
    const [result] = await toolResults(app, parent.session_id);
    expect(result.output).toContain('Recipe make-file completed');
    expect(result.output).toContain('out.txt exists, and it says hello');
    const row = (await app.workflows.runs.list({ kind: 'recipe', name: 'make-file' }))[0];
    expect(row).toMatchObject({ status: 'completed', run_id: recipeRun.id, parent_run_id: parent.run_id });
    expect((row.result.steps as { expect: unknown[] }[])[0].expect).toEqual([
      {
        kind: 'command',
        check: "test -f 'out.txt'",
        passed: true,
        exit_code: 0,
        timed_out: false,
        output: '',
      },
    ]);
    expect((await app.agent.result(recipeRun.id)).text).toContain('Recipe make-file completed');
    expect((await app.runs.events(recipeRun.id)).map((e) => e.type)).toEqual(
      expect.arrayContaining([
        'workflow.started',
        'recipe.step.started',
        'recipe.step.finished',
        'run.finished',
      ]),
    );
  });

  it('retries a step whose expect check fails, telling the new attempt what failed', async () => {
    const { app, provider } = await agentApp([
      reply().text('I think I made it'),
      reply().toolCall('write', { path: 'done.txt', content: 'ok\n' }),
      reply().text('now it exists'),
    ]);
    writeRecipe(
      app.workspace,
      'retrying',
      'description = "retry"\n[retry]\nattempts = 2\n[[steps]]\nid = "make"\nprompt = "Create done.txt"\n[[steps.expect]]\ncommand = "test -f done.txt"\n',
    );
    const result = await app.recipes.run(
      'retrying',
      {},
      { caller: { signal: new AbortController().signal, yolo: true } },
    );
    expect(result.status).toBe('completed');
    expect(result.steps[0]).toMatchObject({ status: 'completed', attempts: 2, output: 'now it exists' });
    expect(result.steps[0].run_ids).toHaveLength(2);
    expect(promptOf(provider.requests[1])).toContain(
      'This is attempt 2 of 3. The previous attempt did not pass its checks:\n- `test -f done.txt` exited 1',
    );
    expect(promptOf(provider.requests[1])).toContain('I think I made it');
  });

  it('stops at a step that still fails and skips the rest', async () => {
    const { app } = await agentApp([reply().text('nothing done')]);
    writeRecipe(
      app.workspace,
      'failing',
      'description = "x"\n[[steps]]\nid = "a"\nprompt = "go"\n[[steps.expect]]\ncontains = "DONE"\n[[steps]]\nid = "b"\nprompt = "never"\n',
    );
    const result = await app.recipes.run('failing', {}, { caller: { signal: new AbortController().signal } });
    expect(result.status).toBe('failed');
    expect(result.steps.map((s) => [s.id, s.status])).toEqual([
      ['a', 'failed'],
      ['b', 'skipped'],
    ]);
    expect(result.error).toBe('step "a" failed: the answer does not contain "DONE"');
    expect(await app.runs.require(result.run_id)).toMatchObject({ status: 'failed', parent_run_id: null });
  });

  it('refuses unknown, missing and ill-typed parameters by name, before anything runs', async () => {
    const app = await makeTestApp();
    writeRecipe(app.workspace, 'make-file', MAKE_FILE);
    const run = (params: Record<string, unknown>) =>
      app.recipes.run('make-file', params, { caller: { signal: new AbortController().signal } });
    await expect(run({})).rejects.toThrow('params.file: required by "make-file"');
    await expect(run({ file: 'a', colour: 'x' })).rejects.toThrow(
      'params.colour: "make-file" has no parameter "colour"; its parameters: file, tone',
    );
    await expect(run({ file: 'a', tone: 'loud' })).rejects.toThrow(
      'params.tone: "loud" is not one of "dry", "warm"',
    );
    await expect(
      app.recipes.run('nope', {}, { caller: { signal: new AbortController().signal } }),
    ).rejects.toThrow(/name: no recipe "nope"; known: /);
    expect(await app.runs.count()).toBe(0);
  });

  it("narrows a step's tools to the calling agent's ceiling and says what it dropped", async () => {
    const { app, provider } = await agentApp(
      [reply().toolCall('run_recipe', { name: 'peek' }), reply().text('peeked'), reply().text('done')],
      {
        extraConfig: {
          agents: { limited: { mode: 'primary', tools: { allow: ['run_recipe', 'view', 'grep'] } } },
        },
      },
    );
    writeRecipe(
      app.workspace,
      'peek',
      'description = "x"\n[[steps]]\nid = "look"\ntools = ["view", "write"]\nprompt = "look"\n',
    );
    const parent = await app.agent.run({ prompt: 'peek', agent: 'limited', yolo: true });
    expect(parent.status).toBe('completed');
    expect(toolsOf(provider.requests[1])).toEqual(['view']);
    const row = (await app.workflows.runs.list({ kind: 'recipe' }))[0];
    expect(row.result.warnings).toEqual([
      'steps[0].tools: write dropped (not available to the calling agent)',
    ]);
  });
});
