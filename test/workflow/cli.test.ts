/**
 * The recipe and workflow commands of the CLI. Pins: `svc recipe list`, `svc recipe validate`
 * (exit 2 when invalid, diagnostics by field), `svc recipe run <name> --params k=v` (a new
 * session, exit 1 when the recipe fails), `svc workflow list`, `svc teams status`, `svc ripple`.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCli } from '../../src/surfaces/cli/index';
import { agentApp } from '../helpers/agent-harness';
import { reply } from '../helpers/fake-provider';

async function cli(
  app: { workspace: string; dataDir: string; env: Record<string, string | undefined> },
  ...args: string[]
) {
  let stdout = '';
  let stderr = '';
  const code = await runCli([...args, '--cwd', app.workspace, '--data-dir', app.dataDir], {
    stdout: { write: (s: string) => (stdout += s) },
    stderr: { write: (s: string) => (stderr += s) },
    env: app.env,
    cwd: app.workspace,
    signal: new AbortController().signal,
  });
  return { code, stdout, stderr };
}

describe('recipe and workflow commands', () => {
  it('lists, validates and runs recipes', async () => {
    const { app } = await agentApp([reply().text('Hello, Ada! GREETED'), reply().text('no marker here')]);
    mkdirSync(join(app.workspace, '.svc', 'recipes'), { recursive: true });
    writeFileSync(
      join(app.workspace, '.svc', 'recipes', 'greet.toml'),
      'description = "Greet someone"\n[[parameters]]\nname = "who"\nrequired = true\n[[steps]]\nid = "hello"\nprompt = "Greet {{ who }}"\n[[steps.expect]]\ncontains = "GREETED"\n',
    );
    writeFileSync(
      join(app.workspace, '.svc', 'recipes', 'bad.toml'),
      'description = "x"\n[[steps]]\nid = "Bad Id"\nprompt = "x"\n',
    );

    const list = await cli(app, 'recipe', 'list');
    expect(list.code).toBe(0);
    expect(list.stdout).toContain('✓ greet                    workspace 1 step  Greet someone');
    expect(list.stdout).toContain('✗ bad ');

    const invalid = await cli(app, 'recipe', 'validate', 'bad');
    expect(invalid.code).toBe(2);
    expect(invalid.stdout).toContain('invalid: bad (workspace');
    expect(invalid.stdout).toContain('error   steps[0].id: must be lowercase letters, digits, - or _');
    expect((await cli(app, 'recipe', 'validate', 'greet')).code).toBe(0);

    const run = await cli(app, 'recipe', 'run', 'greet', '--params', 'who=Ada', '--json');
    expect(run.code, run.stderr + run.stdout).toBe(0);
    const result = JSON.parse(run.stdout);
    expect(result).toMatchObject({
      recipe: 'greet',
      status: 'completed',
      params: { who: 'Ada' },
      output: 'Hello, Ada! GREETED',
      parent_run_id: null,
    });

    const failing = await cli(app, 'recipe', 'run', 'greet', '--params', '{"who":"Bob"}');
    expect(failing.code).toBe(1);
    expect(failing.stdout).toContain('✗ hello                failed: the answer does not contain "GREETED"');
  });

  it('passes --params values to check commands as data, and names a workspace file that replaces a built-in', async () => {
    const { app } = await agentApp([reply().text('hi'), reply().text('reviewed')]);
    const dir = join(app.workspace, '.svc', 'recipes');
    mkdirSync(dir, { recursive: true });
    writeFileSync(
      join(dir, 'greet.toml'),
      'description = "Greet"\n[[parameters]]\nname = "who"\n[[steps]]\nid = "a"\nprompt = "hi"\n[[steps.expect]]\ncommand = "echo \\"hello {{ who }}\\" > out.txt"\n',
    );
    const run = await cli(app, 'recipe', 'run', 'greet', '--params', 'who=$(touch PWNED)');
    expect(run.code, run.stderr + run.stdout).toBe(0);
    expect(readFileSync(join(app.workspace, 'out.txt'), 'utf8')).toBe('hello $(touch PWNED)\n');
    expect(existsSync(join(app.workspace, 'PWNED'))).toBe(false);
    expect(run.stdout).toContain(`recipe greet completed (workspace ${join(dir, 'greet.toml')}; run `);
    expect(run.stderr).toBe('');

    const file = join(dir, 'review-changes.toml');
    writeFileSync(file, 'description = "mine"\n[[steps]]\nid = "a"\nprompt = "review"\n');
    const notice = `${file} replaces the built-in recipe "review-changes" (its own steps and check commands run)`;
    expect((await cli(app, 'recipe', 'list')).stdout).toContain(
      `✓ review-changes           workspace 1 step  mine\n  ! ${notice}`,
    );
    const shadowed = await cli(app, 'recipe', 'run', 'review-changes');
    expect(shadowed.code, shadowed.stderr + shadowed.stdout).toBe(0);
    expect(shadowed.stderr).toBe(`svc: ${notice}\n`);
    expect(shadowed.stdout).toContain(`recipe review-changes completed (workspace ${file}; run `);
  });

  it('lists workflow templates and team status, and analyzes ripple impact', async () => {
    const { app } = await agentApp([], {
      files: { 'src/a.ts': 'export const a = 1;\n', 'src/b.ts': "import { a } from './a';\n" },
    });
    const workflows = await cli(app, 'workflow', 'list', '--json');
    expect(JSON.parse(workflows.stdout)).toEqual({ action: 'list', templates: [], count: 0 });
    expect((await cli(app, 'teams', 'status')).stdout.trim()).toBe('no teams');
    const ripple = await cli(app, 'ripple', '--files', 'src/a.ts', '--json');
    expect(ripple.code).toBe(0);
    expect(JSON.parse(ripple.stdout).dependents).toMatchObject([{ path: 'src/b.ts', depth: 1 }]);
  });
});
