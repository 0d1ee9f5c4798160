/**
 * The bash sandbox (`options.sandbox`). Pins:
 * - mode bwrap with bwrap missing or unusable: bash (and background jobs) fail with an error that
 *   names the fix, nothing runs, nothing is appended; sandbox_status says unavailable (always on);
 * - mode off: commands run as they are, no sandbox event;
 * - bubblewrap can run here (CI installs it; a machine without it fails with the install command);
 * - with bwrap: EVT-31 sandbox_exec_started
 *   is listed by get_agent_run_events beside local_shell_started; the workspace is writable, the
 *   rest read-only, /tmp private; network none cuts it, host shares it; background jobs are
 *   sandboxed; read_only_git protects .git;
 * - `svc config show-sandbox` prints the same JSON as the tool, and a text summary.
 */
import { existsSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import type { App } from '../../src/app';
import { SvcError } from '../../src/errors';
import { probeBwrap } from '../../src/sandbox/bwrap';
import { createSandbox } from '../../src/sandbox/sandbox';
import { invokeTool } from '../../src/tools/core/call-tool';
import { agentApp } from '../helpers/agent-harness';
import { reply } from '../helpers/fake-provider';
import { viaCli } from '../helpers/surfaces';
import { toolHarness } from '../tools/harness';

const probe = probeBwrap(undefined, process.env, 'none');
const MISSING = { options: { sandbox: { mode: 'bwrap', bwrap_path: '/nonexistent/bin/bwrap' } } };
const BWRAP = (extra: Record<string, unknown> = {}) => ({
  options: { sandbox: { mode: 'bwrap', ...extra } },
});

const unique = () => `${process.pid}-${Math.random().toString(36).slice(2)}`;

async function runEvents(app: App, runId: string) {
  const result = (await invokeTool(app, 'get_agent_run_events', { run_id: runId }, { surface: 'agent' })) as {
    events: { type: string; payload: Record<string, unknown> }[];
  };
  return result.events;
}

describe('sandbox: always-on error path', () => {
  it('mode bwrap without a usable bwrap: bash fails with the fix and never runs unsandboxed', async () => {
    const { app, provider } = await agentApp(
      [reply().toolCall('bash', { command: 'echo ran > made.txt' }), reply().text('done')],
      { extraConfig: MISSING },
    );
    const result = await app.agent.run({ prompt: 'make a file', yolo: true });
    expect(result.status).toBe('completed');
    expect(existsSync(join(app.workspace, 'made.txt'))).toBe(false);
    const toolMessage = provider.requests[1].body.messages.find((m: { role: string }) => m.role === 'tool');
    expect(toolMessage.content).toContain(
      'unavailable: bash: options.sandbox.mode is "bwrap" but the sandbox cannot run: options.sandbox.bwrap_path /nonexistent/bin/bwrap is not an executable file',
    );
    expect(toolMessage.content).toContain('apt-get install bubblewrap');
    const types = (await runEvents(app, result.run_id)).map((e) => e.type);
    expect(types).toContain('tool.finished');
    expect(types).not.toContain('local_shell_started');
    expect(types).not.toContain('sandbox_exec_started');
  });

  it('refuses background jobs too, and sandbox_status says why', async () => {
    const h = await toolHarness({ config: MISSING });
    const attempt = h.call('bash', { command: 'echo bg > bg.txt', run_in_background: true });
    await expect(attempt).rejects.toSatisfy(
      (error: unknown) =>
        SvcError.is(error) && error.code === 'unavailable' && /sandbox cannot run/.test(error.message),
    );
    expect(h.events).toEqual([]);
    expect(existsSync(join(h.app.workspace, 'bg.txt'))).toBe(false);
    const status = await h.call('sandbox_status', {});
    expect(status).toMatchObject({
      mode: 'bwrap',
      enforced: false,
      available: false,
      bwrap: { path: null, usable: false, error: expect.stringContaining('/nonexistent/bin/bwrap') },
      message: expect.stringMatching(/^sandbox unavailable: bash calls fail/),
    });
  });

  it('says bwrap is not installed when PATH has none', async () => {
    const h = await toolHarness({ config: BWRAP() });
    const sandbox = createSandbox({
      config: () => h.app.config,
      workspace: h.app.workspace,
      dataDir: h.app.dataDir,
      env: { PATH: join(h.app.workspace, 'empty-bin') },
    });
    const error = 'bwrap is not installed (not found in PATH); install the bubblewrap package';
    expect(sandbox.status()).toMatchObject({
      mode: 'bwrap',
      enforced: false,
      available: false,
      bwrap: { path: null, version: null, usable: false, proc: null, error },
    });
    expect(() => sandbox.plan({ cwd: h.app.workspace })).toThrow(
      `bash: options.sandbox.mode is "bwrap" but the sandbox cannot run: ${error}.`,
    );
  });

  it('mode off: commands run as they are, without a sandbox event', async () => {
    // issue 15: the default is auto (sandboxed where bubblewrap runs); off must be asked for.
    const h = await toolHarness({ config: { options: { sandbox: { mode: 'off' } } } });
    const result = await h.call('bash', { command: 'echo plain > plain.txt && echo ok' });
    expect(result.exit_code).toBe(0);
    expect(h.read('plain.txt')).toBe('plain\n');
    expect(h.events.map((e) => e.type)).toEqual(['local_shell_started', 'local_shell_finished']);
    expect(await h.call('sandbox_status', {})).toMatchObject({
      mode: 'off',
      enforced: false,
      message: expect.stringMatching(/^sandbox off/),
    });
  });

  it('svc config show-sandbox prints the tool JSON, and a text summary without --json', async () => {
    const h = await toolHarness({ config: MISSING });
    const binding = { command: 'config show-sandbox' };
    const json = await viaCli(h.app, binding, {});
    expect(json.code, json.stderr).toBe(0);
    expect(json.json).toEqual(JSON.parse(JSON.stringify(await h.call('sandbox_status', {}))));
    const text = await viaCli(h.app, binding, {}, []);
    expect(text.stdout).toContain('sandbox: mode bwrap; sandbox unavailable');
    expect(text.stdout).toContain('bwrap: not found, not usable: options.sandbox.bwrap_path');
    expect(text.stdout).toContain('tmpfs      /tmp');
    expect(text.stdout).toContain('always blocked: privilege escalation');
  });
});

describe('sandbox: bubblewrap', () => {
  it('bubblewrap is installed and can create a sandbox here (else: apt-get install bubblewrap)', () => {
    expect(probe.error).toBeNull();
    expect(probe.usable).toBe(true);
  });

  it('EVT-31: sandboxed bash appends sandbox_exec_started, listed by get_agent_run_events', async () => {
    const { app } = await agentApp(
      [
        reply().toolCall('bash', { command: 'echo inside > made.txt && echo "sandbox=$SVC_SANDBOX"' }),
        reply().text('done'),
      ],
      { extraConfig: BWRAP() },
    );
    const result = await app.agent.run({ prompt: 'make a file', yolo: true });
    expect(result.status).toBe('completed');
    expect(existsSync(join(app.workspace, 'made.txt'))).toBe(true);
    const events = await runEvents(app, result.run_id);
    const types = events.map((e) => e.type);
    expect(types.indexOf('sandbox_exec_started')).toBeGreaterThan(-1);
    expect(types.indexOf('sandbox_exec_started')).toBeLessThan(types.indexOf('local_shell_started'));
    const started = events.find((e) => e.type === 'sandbox_exec_started')!.payload;
    expect(started).toMatchObject({
      sandbox: 'bwrap',
      bwrap_version: probe.version,
      network: 'none',
      command: 'echo inside > made.txt && echo "sandbox=$SVC_SANDBOX"',
      cwd: '.',
      background: false,
    });
    expect(started.writable).toContain(realpathSync(app.workspace));
    const toolResult = events.find((e) => e.type === 'tool.finished')!.payload;
    expect(toolResult.is_error).toBe(false);
  });

  it('binds the workspace read-write, the rest read-only, and a private /tmp', async () => {
    const h = await toolHarness({ config: { ...BWRAP(), permissions: { allow_outside_workspace: true } } });
    const id = unique();
    const outside = `/var/tmp/svc-sandbox-${id}`;
    const hostTmp = `/tmp/svc-host-${id}`;
    writeFileSync(hostTmp, 'host');
    onTestFinished(() => rmSync(hostTmp, { force: true }));
    const result = await h.call('bash', {
      command: [
        'echo ws > in-workspace.txt',
        `(echo no > ${outside}) 2>&1 | head -1`,
        `echo private > /tmp/svc-private-${id} && cat /tmp/svc-private-${id}`,
        `test -e ${hostTmp} && echo host-tmp-visible || echo host-tmp-hidden`,
      ].join('; '),
    });
    expect(h.read('in-workspace.txt')).toBe('ws\n');
    expect(result.output).toContain('Read-only file system');
    expect(result.output).toContain('private');
    expect(result.output).toContain('host-tmp-hidden');
    expect(existsSync(outside)).toBe(false);
    expect(existsSync(`/tmp/svc-private-${id}`)).toBe(false);
    expect(h.events.map((e) => e.type)).toEqual([
      'sandbox_exec_started',
      'local_shell_started',
      'local_shell_finished',
      // The write outside the workspace hit the read-only file system: a denial the ledger keeps.
      'sandbox_denied',
    ]);
    const status = await h.call('sandbox_status', {});
    expect(status).toMatchObject({ mode: 'bwrap', enforced: true, available: true, network: 'none' });
    expect(status.binds).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ path: '/', access: 'read-only' }),
        expect.objectContaining({ path: '/tmp', access: 'tmpfs' }),
        expect.objectContaining({ path: realpathSync(h.app.workspace), access: 'read-write' }),
      ]),
    );
  });

  it('network none cuts the network; network host shares it', async () => {
    const server = createServer((socket) => socket.end());
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    onTestFinished(() => new Promise<void>((resolve) => server.close(() => resolve())));
    const port = (server.address() as { port: number }).port;
    const command = `node -e "require('net').connect(${port},'127.0.0.1').on('connect',()=>{console.log('connected');process.exit(0)}).on('error',(e)=>{console.log('no network',e.code);process.exit(0)})"`;
    const none = await toolHarness({ config: BWRAP() });
    expect((await none.call('bash', { command })).output).toContain('no network');
    const host = await toolHarness({ config: BWRAP({ network: 'host' }) });
    expect((await host.call('bash', { command })).output).toContain('connected');
    expect(host.events[0]).toMatchObject({ type: 'sandbox_exec_started', payload: { network: 'host' } });
  });

  it('sandboxes background jobs', async () => {
    const h = await toolHarness({ config: { ...BWRAP(), permissions: { allow_outside_workspace: true } } });
    const id = unique();
    const started = await h.call('bash', {
      command: `echo bg > bg.txt; (echo no > /var/tmp/svc-bg-${id}) 2>&1 | head -1`,
      run_in_background: true,
    });
    const output = await h.call('job_output', { job_id: started.job_id, wait_seconds: 10 });
    expect(output.status).toBe('exited');
    expect(output.output).toContain('Read-only file system');
    expect(h.read('bg.txt')).toBe('bg\n');
    expect(h.events.map((e) => e.type)).toEqual(['sandbox_exec_started', 'background_job_started']);
    expect(h.events[0].payload).toMatchObject({ background: true });
  });

  it('read_only_git keeps .git read-only inside the sandbox', async () => {
    const h = await toolHarness({ git: true, config: BWRAP({ read_only_git: true }) });
    const result = await h.call('bash', { command: '(touch .git/svc-probe) 2>&1 | head -1; touch ok.txt' });
    expect(result.output).toContain('Read-only file system');
    expect(existsSync(join(h.app.workspace, '.git', 'svc-probe'))).toBe(false);
    expect(existsSync(join(h.app.workspace, 'ok.txt'))).toBe(true);
  });
});
