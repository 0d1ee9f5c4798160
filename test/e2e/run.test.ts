/**
 * `svc run` as a user runs it (the built binary) against the scripted fake provider. Pins: the
 * answer on stdout and exit 0; --output json and stream-json shapes; the prompt from stdin;
 * exit 2 for bad usage and for no configured model (with the how-to); exit 1 for a failed run;
 * --session continues with the history; CLI-12..15 readouts after a run.
 */
import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { fakeProvider, reply } from '../helpers/fake-provider';
import { runBin } from '../helpers/run-bin';
import { tmpWorkspace } from '../helpers/tmp-workspace';

function workspace(providerUrl?: string, extra = '') {
  const config = providerUrl
    ? `[providers.fake]\ntype = "openai-compat"\nbase_url = "${providerUrl}"\n[models]\nlarge = "fake/m1"\n${extra}`
    : extra;
  return tmpWorkspace({ files: { 'svc.toml': config, 'hello.txt': 'hi there\n' } });
}

const env = (ws: string) => ({
  HOME: join(ws, '.home'),
  XDG_CONFIG_HOME: join(ws, '.home', '.config'),
  XDG_DATA_HOME: join(ws, '.home', '.local', 'share'),
});

describe('svc run', () => {
  it('prints the answer and exits 0', async () => {
    const provider = await fakeProvider([reply().text('Hello from the model.')]);
    const ws = workspace(provider.url);
    const result = await runBin(['run', 'say hello'], { cwd: ws, env: env(ws) });
    expect(result.stderr).toBe('');
    expect(result).toMatchObject({ code: 0, stdout: 'Hello from the model.\n' });
    expect(provider.requests[0].body.messages.at(-1)).toMatchObject({ role: 'user', content: 'say hello' });
  });

  it('--output json prints one result object; the prompt can come from stdin', async () => {
    const provider = await fakeProvider([reply().text('42').usage(12, 3)]);
    const ws = workspace(provider.url);
    const result = await runBin(['run', '--output', 'json'], {
      cwd: ws,
      env: env(ws),
      input: 'what is the answer?\n',
    });
    expect(result.code, result.stderr).toBe(0);
    const json = JSON.parse(result.stdout);
    expect(json).toMatchObject({
      status: 'completed',
      text: '42',
      steps: 1,
      usage: { input_tokens: 12, output_tokens: 3 },
      model: 'fake/m1',
      agent: 'build',
      run_id: expect.stringMatching(/^run_/),
      session_id: expect.stringMatching(/^ses_/),
    });
    expect(provider.requests[0].body.messages.at(-1).content).toBe('what is the answer?\n');
  });

  it('--output stream-json prints one JSON event per line, then the result', async () => {
    const provider = await fakeProvider([reply().toolCall('get_workflow_phase', {}), reply().text('done')]);
    const ws = workspace(provider.url);
    const result = await runBin(['run', '--output', 'stream-json', 'check the phase'], {
      cwd: ws,
      env: env(ws),
    });
    expect(result.code, result.stderr).toBe(0);
    const lines = result.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    const types = lines.map((l) => l.type);
    expect(types[0]).toBe('queue.changed');
    expect(types).toContain('run.started');
    expect(types).toContain('tool.started');
    expect(types).toContain('tool.finished');
    expect(types).toContain('message.delta');
    expect(types.at(-2)).toBe('state.changed');
    expect(lines.at(-1)).toMatchObject({ type: 'result', status: 'completed', text: 'done', steps: 2 });
    expect(lines.find((l) => l.type === 'tool.finished')).toMatchObject({
      tool: 'get_workflow_phase',
      is_error: false,
    });
  });

  it('CLI-FIRST-2: a key svc does not know in svc.toml (a typo) is named on stderr, and the run goes on', async () => {
    const provider = await fakeProvider([reply().text('Hello.')]);
    const ws = workspace(provider.url, '[options]\nmax_step = 3\n');
    const result = await runBin(['run', 'say hello'], { cwd: ws, env: env(ws) });
    expect(result).toMatchObject({ code: 0, stdout: 'Hello.\n' });
    expect(result.stderr).toBe(
      `svc: warning: unknown config key options.max_step (in ${join(ws, 'svc.toml')}); ignored\n`,
    );
  });

  it('exits 2 with the how-to when no model is configured, and writes nothing', async () => {
    const ws = workspace();
    const result = await runBin(['run', 'hello'], { cwd: ws, env: env(ws) });
    expect(result.code).toBe(2);
    // The resolver's own how-to (providers domain): what to add, and how to check it.
    expect(result.stderr).toMatch(/^svc: no model provider is configured/);
    expect(result.stderr).toContain('[models] large');
    expect(existsSync(join(ws, '.svc', 'svc.db'))).toBe(false);
    expect(result.stdout).toBe('');
  });

  it('CLI-FIRST-8: run from a subdirectory of a project, the no-provider error names the svc.toml above', async () => {
    const ws = workspace(undefined, '[options]\nmax_steps = 3\n');
    const sub = join(ws, 'src', 'deep');
    mkdirSync(sub, { recursive: true });
    const result = await runBin(['run', 'hi'], { cwd: sub, env: env(ws) });
    expect(result.code).toBe(2);
    const first = result.stderr.split('\n')[0];
    expect(first).toBe(
      `svc: no model provider is configured, and no local model server answered; ${join(ws, 'svc.toml')} is in a parent directory: run svc from there or pass --cwd ${ws}.`,
    );
    // From the project's root (the file read, nothing above): no such hint.
    const root = await runBin(['run', 'hi'], { cwd: ws, env: env(ws) });
    expect(root.stderr).toMatch(
      /^svc: no model provider is configured, and no local model server answered\.\n/,
    );
  });

  // Several svc processes one after another (23.7 s on the last CI run here).
  it('exits 2 for bad usage: no prompt, a bad --output, a bad --max-steps, an unknown --session or agent', {
    timeout: 120_000,
  }, async () => {
    const provider = await fakeProvider([]);
    const ws = workspace(provider.url);
    const noPrompt = await runBin(['run'], { cwd: ws, env: env(ws) });
    expect(noPrompt.code).toBe(2);
    expect(noPrompt.stderr).toContain('no prompt');
    const badOutput = await runBin(['run', '--output', 'xml', 'x'], { cwd: ws, env: env(ws) });
    expect(badOutput.code).toBe(2);
    expect(badOutput.stderr).toContain("'xml' is invalid");
    const badSteps = await runBin(['run', '--max-steps', 'zero', 'x'], { cwd: ws, env: env(ws) });
    expect(badSteps).toMatchObject({
      code: 2,
      stderr: 'svc: --max-steps: expected a positive integer, got "zero"\n',
    });
    const badSession = await runBin(['run', '--session', 'ses_nope', 'x'], { cwd: ws, env: env(ws) });
    expect(badSession).toMatchObject({
      code: 2,
      stderr: 'svc: --session: no session "ses_nope"; see svc session list\n',
    });
    const emptySession = await runBin(['run', '--session', '', 'x'], { cwd: ws, env: env(ws) });
    expect(emptySession).toMatchObject({
      code: 2,
      stderr: 'svc: --session: empty session id; see svc session list\n',
    });
    const badAgent = await runBin(['run', '--agent', 'explore', 'x'], { cwd: ws, env: env(ws) });
    expect(badAgent.code).toBe(2);
    expect(badAgent.stderr).toContain('"explore" is a subagent agent');
    // An unknown provider or model, or a missing credential: caught before the run, exit 2.
    const badProvider = await runBin(['run', '--model', 'nope/m1', 'x'], { cwd: ws, env: env(ws) });
    expect(badProvider.code).toBe(2);
    expect(badProvider.stderr).toContain('unknown provider "nope"');
    const badModel = await runBin(['run', '--model', 'openai/no-such-model', 'x'], { cwd: ws, env: env(ws) });
    expect(badModel.code).toBe(2);
    expect(badModel.stderr).toContain('openai has no model "no-such-model"');
    const noKey = await runBin(['run', '--model', 'anthropic/claude-sonnet-4-5-20250929', 'x'], {
      cwd: ws,
      env: env(ws),
    });
    expect(noKey.code).toBe(2);
    expect(noKey.stderr).toMatch(/^svc: anthropic: no API key: set ANTHROPIC_API_KEY/);
    expect(provider.requests).toHaveLength(0);
  });

  it('exits 1 with the redacted reason when the run fails', async () => {
    const provider = await fakeProvider([
      reply().httpError(401, {
        error: { message: 'invalid key sk-live-abcdefghijklmnopqrstuvwxyz', type: 'auth' },
      }),
    ]);
    const ws = workspace(provider.url);
    const result = await runBin(['run', 'hello'], { cwd: ws, env: env(ws) });
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(
      /^svc: run failed: the provider rejected the API key \(HTTP 401\) \(provider fake, model fake\/m1\)\n/,
    );
    expect(result.stderr).not.toContain('sk-live-abcdefghijklmnopqrstuvwxyz');
  });

  // Nine svc processes one after another: on a loaded 2-core CI box each start can take seconds.
  it('--session continues a session with its history; CLI-08/CLI-12/CLI-13/CLI-14/CLI-15 readouts report it', {
    timeout: 120_000,
  }, async () => {
    const provider = await fakeProvider([
      reply().text('first answer'),
      reply().text('second answer'),
      reply().text('third answer'),
    ]);
    const ws = workspace(provider.url);
    const first = JSON.parse(
      (await runBin(['run', '--output', 'json', 'first'], { cwd: ws, env: env(ws) })).stdout,
    );
    const second = await runBin(['run', '--session', first.session_id, 'second'], { cwd: ws, env: env(ws) });
    expect(second).toMatchObject({ code: 0, stdout: 'second answer\n' });
    expect(provider.requests[1].body.messages.slice(1)).toEqual([
      { role: 'user', content: 'first' },
      { role: 'assistant', content: 'first answer' },
      { role: 'user', content: 'second' },
    ]);

    // CLI-12: session diagnose --format=json
    const diagnose = await runBin(['session', 'diagnose', '--format=json'], { cwd: ws, env: env(ws) });
    expect(diagnose.code, diagnose.stderr).toBe(0);
    expect(JSON.parse(diagnose.stdout)).toMatchObject({
      session_id: first.session_id,
      ok: true,
      runs: { total: 2, failed: 0, interrupted: 0 },
      checks: expect.arrayContaining([expect.objectContaining({ name: 'model', status: 'ok' })]),
    });
    // CLI-13: session status
    const status = await runBin(['session', 'status'], { cwd: ws, env: env(ws) });
    expect(status.code, status.stderr).toBe(0);
    expect(status.stdout).toContain(`session ${first.session_id} "first": ok`);
    expect(status.stdout).toMatch(/✓ last_run\s+run_\w+ completed/);
    // CLI-14: stats --json
    const stats = await runBin(['stats', '--json'], { cwd: ws, env: env(ws) });
    expect(stats.code, stats.stderr).toBe(0);
    expect(JSON.parse(stats.stdout)).toMatchObject({
      sessions: { total: 1 },
      runs: { total: 2, by_status: { completed: 2 }, by_origin: { cli: 2 } },
      messages: { total: 4, by_role: { user: 2, assistant: 2 } },
    });
    // CLI-15: projects --json
    const projects = await runBin(['projects', '--json'], { cwd: ws, env: env(ws) });
    expect(projects.code, projects.stderr).toBe(0);
    expect(JSON.parse(projects.stdout)).toMatchObject({
      path: join(ws, '.home', '.local', 'share', 'svc', 'projects.json'),
      count: 1,
      projects: [{ path: ws, runs: 2, data_dir: join(ws, '.svc') }],
    });
    // CLI-08: config show-run-ledger --format=json
    const ledger = await runBin(['config', 'show-run-ledger', '--format=json'], { cwd: ws, env: env(ws) });
    expect(ledger.code, ledger.stderr).toBe(0);
    expect(JSON.parse(ledger.stdout)).toMatchObject({
      store: { kind: 'sqlite', available: true, path: join(ws, '.svc', 'svc.db') },
      runs: { total: 2, by_status: { completed: 2 } },
    });
    // --continue picks the current session
    const third = await runBin(['run', '--continue', '--output', 'json', 'third'], { cwd: ws, env: env(ws) });
    expect(third.code, third.stderr).toBe(0);
    expect(JSON.parse(third.stdout)).toMatchObject({ session_id: first.session_id, text: 'third answer' });
    // session list shows it as the current session
    const list = await runBin(['session', 'list'], { cwd: ws, env: env(ws) });
    expect(list.stdout).toMatch(new RegExp(`^\\* ${first.session_id}\\s+idle`));
  });
});
