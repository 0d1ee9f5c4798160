/**
 * Parameters in recipe check commands. Pins: a placeholder's quoting context is read from the
 * command (bare, double, single quotes, `$(…)`, backticks, comments, whole words); values reach
 * the command through its environment (`SVC_PARAM_<name>`), so `$(…)`, backticks, `;`, quotes
 * and newlines in them are inert; a string value starting with `-` standing as a whole word is
 * refused (argument injection) unless the parameter allows it; a parameter inside single quotes
 * is a validation error; a step's output (model output) never reaches a check command, neither
 * from a workflow template (refused at save) nor through the run options; a `command` parameter
 * runs as a command line, so the built-in fix-failing-tests check passes and fails as the command
 * does.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { commandPlaceholders, renderCheckCommand } from '../../src/recipes/check-command';
import { invokeTool } from '../../src/tools/core/call-tool';
import { agentApp } from '../helpers/agent-harness';
import { reply } from '../helpers/fake-provider';
import { makeTestApp } from '../helpers/make-test-app';
import { router } from './helpers';

function writeRecipe(workspace: string, name: string, text: string) {
  mkdirSync(join(workspace, '.svc', 'recipes'), { recursive: true });
  writeFileSync(join(workspace, '.svc', 'recipes', `${name}.toml`), text);
}

// printf writes each argument followed by "|": the file shows exactly which words the shell made.
const ECHO = `
description = "Write the parameter to out.txt"

[[parameters]]
name = "who"
required = true

[[steps]]
id = "say"
prompt = "say hi"

[[steps.expect]]
command = "printf '%s|' {{ who }} \\"hello {{ who }}\\" > out.txt"
`;

const HOSTILE = [
  '$(touch PWNED1)',
  '`touch PWNED2`',
  'x; touch PWNED3',
  'a && touch PWNED4 | cat',
  `it's "quoted" \\ '$(touch PWNED5)'`,
  'two words\nand a line',
  '${PATH} $HOME *',
];

const caller = () => ({ caller: { signal: new AbortController().signal, yolo: true } });

describe('check command placeholders', () => {
  it('reads the quoting context and whole words of each placeholder', () => {
    const at = (command: string) =>
      commandPlaceholders(command).map((p) => [p.reference, p.context, p.wholeWord]);
    expect(at('git log -1 {{ a }} "x {{ b }}" \'{{ c }}\' "{{ d }}" --x={{ e }}')).toEqual([
      ['a', 'bare', true],
      ['b', 'double', false],
      ['c', 'single', true],
      ['d', 'double', true],
      ['e', 'bare', false],
    ]);
    expect(at('echo "$(cat {{ a }})" `ls {{ b }}` x;{{ c }}|y')).toEqual([
      ['a', 'bare', true],
      ['b', 'bare', true],
      ['c', 'bare', true],
    ]);
    expect(at("echo \\' {{ a }} # don't '{{ b }}'\ntrue {{ c }}{{ d }}")).toEqual([
      ['a', 'bare', true],
      ['c', 'bare', false],
      ['d', 'bare', false],
    ]);
  });

  it('replaces placeholders by variable expansions and passes the values as variables', () => {
    const recipe = {
      parameters: [
        { name: 'who', type: 'string' as const, description: '', required: false },
        { name: 'cmd', type: 'command' as const, description: '', required: false },
      ],
      steps: [],
    };
    expect(
      renderCheckCommand(
        'r',
        recipe,
        '{{ cmd }} {{ who }} "hi {{ who }}!"',
        { who: '$(id)', cmd: 'npm test' },
        'f',
      ),
    ).toEqual({
      command: 'npm test "$SVC_PARAM_who" "hi ${SVC_PARAM_who}!"',
      vars: { SVC_PARAM_who: '$(id)' },
      equivalent: `npm test '$(id)' "hi \\$(id)!"`,
    });
    expect(() => renderCheckCommand('r', recipe, "echo '{{ who }}'", { who: 'x', cmd: '' }, 'f')).toThrow(
      /inside single quotes/,
    );
    expect(() =>
      renderCheckCommand('r', recipe, 'git log {{ who }}', { who: '--output=x', cmd: '' }, 'f'),
    ).toThrow(/starts with "-"/);
  });

  it('the equivalent command (what the analysis and the prompt see) makes the same words as the one that runs', () => {
    const recipe = { parameters: [{ name: 'v', type: 'string' as const, description: '', required: false }] };
    const template = `printf '%s|' {{ v }} "a {{ v }} b" x{{ v }}y "$(printf '%s' "{{ v }}")"`;
    for (const v of [...HOSTILE, '', ' ', "'", '"', '\\', '$', '`']) {
      const { command, vars, equivalent } = renderCheckCommand('r', recipe, template, { v }, 'f');
      // stdin not a socket (Node's 'pipe'): bash takes one, with no SHLVL, for sshd's and sources
      // ~/.bashrc, 0.4 s a call on a machine whose .bashrc starts pyenv (this test hit 60 s so).
      const run = (script: string) =>
        spawnSync('bash', ['-c', script], {
          env: { ...vars, PATH: process.env.PATH },
          encoding: 'utf8',
          stdio: ['ignore', 'pipe', 'pipe'],
        }).stdout;
      const expected = `${v}|a ${v} b|x${v}y|${v}|`;
      expect(run(command)).toBe(expected);
      expect(run(equivalent)).toBe(expected);
    }
  });
});

describe('recipe check commands', () => {
  it('$(…), backticks, ;, quotes and newlines in a parameter are inert', async () => {
    const { app } = await agentApp(router(HOSTILE.length + 1, () => reply().text('hi')));
    writeRecipe(app.workspace, 'echo', ECHO);
    for (const who of HOSTILE) {
      const result = await app.recipes.run('echo', { who }, caller());
      expect(result.status).toBe('completed');
      expect(readFileSync(join(app.workspace, 'out.txt'), 'utf8')).toBe(`${who}|hello ${who}|`);
    }
    for (let i = 1; i <= 5; i++) expect(existsSync(join(app.workspace, `PWNED${i}`))).toBe(false);
  });

  it('refuses a value starting with "-" as a whole word before anything runs, unless the parameter allows it', async () => {
    const { app } = await agentApp([reply().text('ok')]);
    const recipe = (allow: string) =>
      `description = "log"\n[[parameters]]\nname = "target"\n${allow}[[steps]]\nid = "a"\nprompt = "go"\n[[steps.expect]]\ncommand = "printf '%s|' {{ target }} --ref={{ target }} > out.txt"\n`;
    writeRecipe(app.workspace, 'log', recipe(''));
    await expect(app.recipes.run('log', { target: '--output=PWNED' }, caller())).rejects.toThrow(
      `params.target: "--output=PWNED" starts with "-" and stands as a whole word in recipe "log"'s check command (steps[0].expect[0].command), where it would be read as an option`,
    );
    expect(await app.runs.count()).toBe(0);
    writeRecipe(app.workspace, 'log', recipe('allow_leading_dash = true\n'));
    const result = await app.recipes.run('log', { target: '-n' }, caller());
    expect(result.status).toBe('completed');
    expect(readFileSync(join(app.workspace, 'out.txt'), 'utf8')).toBe('-n|--ref=-n|');
  });

  it('recipe_validate refuses a parameter inside single quotes and a quoted command parameter', async () => {
    const app = await makeTestApp();
    const result = (await invokeTool(
      app,
      'recipe_validate',
      {
        content:
          'description = "x"\n[[parameters]]\nname = "who"\n[[parameters]]\nname = "run"\ntype = "command"\n[[steps]]\nid = "a"\nprompt = "go"\n[[steps.expect]]\ncommand = "echo \'hi {{ who }}\' \\"{{ run }}\\""\n',
      },
      { surface: 'cli' },
    )) as { valid: boolean; diagnostics: { field: string; message: string }[] };
    expect(result.valid).toBe(false);
    expect(result.diagnostics.map((d) => [d.field, d.message])).toEqual([
      ['steps[0].expect[0].command', expect.stringContaining('{{ who }} is inside single quotes')],
      [
        'steps[0].expect[0].command',
        expect.stringContaining('{{ run }} is a command parameter inside double quotes'),
      ],
    ]);
  });

  it("never passes a step's output to a check command: refused at save and at run", async () => {
    const app = await makeTestApp();
    writeRecipe(app.workspace, 'echo', ECHO);
    await expect(
      invokeTool(
        app,
        'workflow_template',
        {
          action: 'save',
          name: 'chain',
          steps: [
            { id: 'ask', prompt: 'who?' },
            { id: 'greet', recipe: 'echo', params: { who: '{{ steps.ask.output }}' }, depends_on: ['ask'] },
          ],
        },
        { surface: 'cli' },
      ),
    ).rejects.toThrow(
      `steps[1].params.who: recipe "echo" uses "who" in a check command (steps[0].expect[0].command), and here its value comes from a step's output (model output); check commands take parameters only, never model output`,
    );
    await expect(
      app.recipes.run('echo', { who: 'x' }, { ...caller(), modelOutputParams: ['who'] }),
    ).rejects.toThrow('params.who: recipe "echo" uses "who" in a check command');
    await expect(
      app.recipes.run(
        'fix-failing-tests',
        { test_command: 'true' },
        { ...caller(), modelOutputParams: ['test_command'] },
      ),
    ).rejects.toThrow('command parameters are given by the operator only');
    expect(await app.runs.count()).toBe(0);
  });

  it('the built-in fix-failing-tests runs its test_command as a command line: passes when it exits 0, fails when not', async () => {
    const { app } = await agentApp(router(6, () => reply().text('fixed')));
    const pass = await app.recipes.run('fix-failing-tests', { test_command: 'true --version' }, caller());
    expect(pass.status).toBe('completed');
    expect(pass.steps[1].expect[0]).toMatchObject({ check: 'true --version', passed: true, exit_code: 0 });
    const fail = await app.recipes.run('fix-failing-tests', { test_command: 'sh -c "exit 3"' }, caller());
    expect(fail.status).toBe('failed');
    expect(fail.steps[1]).toMatchObject({ status: 'failed', attempts: 3 });
    expect(fail.steps[1].expect[0]).toMatchObject({ check: 'sh -c "exit 3"', passed: false, exit_code: 3 });
  });
});
