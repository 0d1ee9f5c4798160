/**
 * Issue 4 end to end, with the built binary and the scripted fake provider: `svc run` has the
 * model read a file, edit it, run a shell command that tests the edit, create a checkpoint, and
 * answer. Checks the workspace, the run ledger rows and events, and the session messages.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { allTools } from '../../src/tools/index';
import { fakeProvider, reply } from '../helpers/fake-provider';
import { makeTestApp } from '../helpers/make-test-app';
import { runBin } from '../helpers/run-bin';
import { tmpWorkspace } from '../helpers/tmp-workspace';

// The run spawns svc, node and git several times: minutes on a loaded CI machine, not seconds.
describe('svc run: read, edit, test, checkpoint, answer', () => {
  it('fixes a bug in a real workspace and leaves a complete record', async () => {
    const provider = await fakeProvider([
      reply().text('Let me look at the code.').toolCall('view', { path: 'src/math.js' }),
      reply().toolCall('edit', { path: 'src/math.js', old_string: 'a - b', new_string: 'a + b' }),
      reply().toolCall('bash', { command: 'node test.mjs', description: 'run the test' }),
      reply().toolCall('checkpoint_create', { name: 'fixed add' }),
      reply().text(
        'Fixed `add` in src/math.js (it subtracted); `node test.mjs` passes. Checkpoint "fixed add" saved.',
      ),
    ]);
    const ws = tmpWorkspace({
      git: true,
      files: {
        'src/math.js': 'export const add = (a, b) => a - b;\n',
        'test.mjs':
          "import { add } from './src/math.js';\nif (add(2, 3) !== 5) { console.error('add(2, 3) =', add(2, 3)); process.exit(1); }\nconsole.log('ok: add(2, 3) = 5');\n",
        '.gitignore': '.svc/\n.home/\n',
        // The edit and the test command are allowed by config (no --yolo): the prompts are skipped for them only.
        'svc.toml': `[providers.fake]\ntype = "openai-compat"\nbase_url = "${provider.url}"\n[models]\nlarge = "fake/m1"\n[permissions]\nallowed_tools = ["edit", "bash"]\n`,
      },
    });
    const env = {
      HOME: join(ws, '.home'),
      XDG_CONFIG_HOME: join(ws, '.home', '.config'),
      XDG_DATA_HOME: join(ws, '.home', '.local', 'share'),
      // The user trusts the repository (its allowlist is a trust-gated key; untrusted, a note says so).
      SVC_TRUST_WORKSPACE: '1',
    };
    const head = execFileSync('git', ['rev-parse', 'HEAD'], { cwd: ws }).toString().trim();

    const result = await runBin(['run', 'The test fails. Fix add.'], { cwd: ws, env, timeoutMs: 60_000 });
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    expect(result.stdout).toBe(
      'Let me look at the code.\nFixed `add` in src/math.js (it subtracted); `node test.mjs` passes. Checkpoint "fixed add" saved.\n',
    );

    // The workspace: the fix is on disk, the test passes, git HEAD and branch are untouched.
    expect(readFileSync(join(ws, 'src/math.js'), 'utf8')).toBe('export const add = (a, b) => a + b;\n');
    expect(execFileSync(process.execPath, ['test.mjs'], { cwd: ws }).toString()).toBe('ok: add(2, 3) = 5\n');
    expect(execFileSync('git', ['rev-parse', 'HEAD'], { cwd: ws }).toString().trim()).toBe(head);

    // What the model saw: the file content, then the test output.
    const toolMessages = provider.requests.map((r) => r.body.messages.at(-1));
    expect(toolMessages[1]).toMatchObject({ role: 'tool', content: expect.stringContaining('a - b') });
    expect(toolMessages[3]).toMatchObject({
      role: 'tool',
      content: expect.stringContaining('ok: add(2, 3) = 5'),
    });
    expect(toolMessages[4]).toMatchObject({
      role: 'tool',
      content: expect.stringContaining('"fixed add" created'),
    });

    const app = await makeTestApp({ workspace: ws, env, tools: allTools });
    // The run ledger: one completed run with every step and tool call, and the shell event.
    const [run] = await app.runs.list();
    expect(run).toMatchObject({
      status: 'completed',
      steps: 5,
      origin: 'cli',
      agent: 'build',
      model: 'fake/m1',
    });
    const events = await app.runs.events(run.id);
    const tools = events
      .filter((e) => e.type === 'tool.finished')
      .map((e) => [e.payload.tool, e.payload.is_error]);
    expect(tools).toEqual([
      ['view', false],
      ['edit', false],
      ['bash', false],
      ['checkpoint_create', false],
    ]);
    const types = events.map((e) => e.type);
    // The shell tool's own ledger event lands inside the bash call, with its tool_call_id.
    const bashStart = events.findIndex((e) => e.type === 'tool.started' && e.payload.tool === 'bash');
    const bashEnd = events.findIndex((e) => e.type === 'tool.finished' && e.payload.tool === 'bash');
    const shell = events.findIndex((e) => e.type === 'local_shell_started');
    expect(shell).toBeGreaterThan(bashStart);
    expect(shell).toBeLessThan(bashEnd);
    expect(events[shell].payload.tool_call_id).toBe(events[bashStart].payload.tool_call_id);
    expect(
      events.filter((e) => e.type === 'permission.allowed').map((e) => [e.payload.tool, e.payload.via]),
    ).toEqual([
      ['edit', 'allowed_tools'],
      ['bash', 'allowed_tools'],
    ]);
    expect(types.at(-1)).toBe('run.finished');

    // The session: every step stored as typed parts, in order.
    const messages = await app.sessions.messages(run.session_id);
    expect(messages.map((m) => m.role)).toEqual([
      'user',
      'assistant',
      'tool',
      'assistant',
      'tool',
      'assistant',
      'tool',
      'assistant',
      'tool',
      'assistant',
    ]);
    expect(messages.filter((m) => m.role === 'assistant').flatMap((m) => m.parts.map((p) => p.type))).toEqual(
      ['text', 'tool-call', 'tool-call', 'tool-call', 'tool-call', 'text'],
    );
    expect(
      messages
        .filter((m) => m.role === 'tool')
        .every((m) => m.parts.every((p) => p.type === 'tool-result' && !p.is_error)),
    ).toBe(true);
    expect(messages.every((m) => m.finished_at !== null)).toBe(true);

    // The checkpoint exists, named as the model asked.
    const checkpoints = (await (
      await import('../../src/tools/core/call-tool')
    ).invokeTool(
      app,
      'checkpoint_list',
      {},
      {
        surface: 'cli',
      },
    )) as { checkpoints: { name: string }[] };
    expect(checkpoints.checkpoints.map((c) => c.name)).toContain('fixed add');
  }, 120_000);
});
