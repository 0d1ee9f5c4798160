/**
 * The command sandbox on by default (issue 15, items 1, 2 and 4). Runs where bubblewrap can run
 * (CI installs it; the first test fails elsewhere with the install command). Pins:
 * - the default (mode auto) sandboxes bash: the deny list (~/.ssh, ~/.netrc…) and svc's data dir
 *   are not mounted, the data dir's own command output stays readable, the environment is
 *   scrubbed (the secrets in svc's environment never reach a command);
 * - what the sandbox stopped comes back as a denial the model reads (path hidden, write outside
 *   the workspace, network off) and a sandbox_denied ledger event;
 * - every tool refuses the data dir, the credential store and the deny list;
 * - a timeout kills the whole sandbox;
 * - auto without a usable bubblewrap falls back with one notice and the install command, and
 *   the environment is still scrubbed.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, realpathSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { probeBwrap } from '../../src/sandbox/bwrap';
import type { TestAppOptions } from '../helpers/make-test-app';
import { toolHarness } from '../tools/harness';
import { leaks, plant } from './plant';

const probe = probeBwrap(undefined, process.env, 'none');

async function planted(options: TestAppOptions = {}) {
  const p = plant();
  const h = await toolHarness({ workspace: p.workspace, env: p.env, ...options });
  return { p, h };
}

function running(pattern: string): boolean {
  try {
    execFileSync('pgrep', ['-f', pattern], { stdio: 'pipe' });
    return true;
  } catch {
    return false;
  }
}

describe('sandbox on by default', () => {
  it('bubblewrap is installed and can create a sandbox here (else: apt-get install bubblewrap)', () => {
    expect(probe.error).toBeNull();
    expect(probe.usable).toBe(true);
  });

  it('mode auto sandboxes bash: credentials and the data dir are not mounted, tool output is', async () => {
    const { p, h } = await planted({ config: { options: { bash: { max_output_bytes: 2000 } } } });
    const spill = await h.call('bash', { command: 'seq 1 5000' });
    expect(spill.output_file).toBeDefined();
    const result = await h.call('bash', {
      command: [
        // Through a variable: the parse-based rules cannot see the path, only the sandbox stops it.
        'H=$(printf %s ~)',
        'find $H/.ssh $H/.aws -type f | wc -l',
        'cat $H/.ssh/id_ed25519 $H/.aws/credentials $H/.netrc $H/.npmrc $H/.config/svc/credentials.json 2>&1',
        'D=.s; ls -A ${D}vc',
        `tail -1 ${spill.output_file}`,
      ].join('; '),
    });
    expect(leaks(p, result.output)).toEqual([]);
    const lines = result.output.split('\n');
    expect(lines[0]).toBe('0');
    expect(result.output).toContain('No such file or directory');
    expect(result.output).toContain('Permission denied'); // ~/.netrc: /dev/null in its place
    expect(result.output).toContain('jobs\nshell\ntool-output\n5000\n');
    expect(h.events.map((e) => e.type)).toContain('sandbox_exec_started');
    expect(result.sandbox_denials).toEqual(
      expect.arrayContaining([
        expect.objectContaining({
          kind: 'path_denied',
          source: 'sandbox',
          target: join(realpathSync(p.home), '.ssh', 'id_ed25519'),
        }),
      ]),
    );
    expect(h.modelText('bash', result)).toContain(
      `is not available to commands: it is in ~/.ssh (SSH keys), which svc keeps out of reach on purpose, so it looks missing or unreadable. The user can allow it with options.sandbox.allow_read = ["~/.ssh"]`,
    );
    expect(h.events.filter((e) => e.type === 'sandbox_denied').length).toBeGreaterThan(0);
  });

  it('scrubs the environment: secrets in svc’s environment never reach a command', async () => {
    const { p, h } = await planted({
      config: {
        options: { shell_env: { include: ['PLANTED_*', 'DATABASE_URL'], set: { NODE_ENV: 'test' } } },
      },
    });
    const result = await h.call('bash', { command: 'env; echo "[$OPENAI_API_KEY][$DATABASE_URL]"' });
    expect(leaks(p, result.output)).toEqual([]);
    expect(result.output).toContain(`PATH=${p.env.PATH}\n`);
    expect(result.output).toContain('NODE_ENV=test\n');
    expect(result.output).toContain('SVC_SANDBOX=bwrap\n');
    expect(result.output).toContain('[][]');
    const status = await h.call('sandbox_status', {});
    expect(status.env).toMatchObject({
      include: ['PLANTED_*', 'DATABASE_URL'],
      set: ['NODE_ENV'],
      dropped: ['DATABASE_URL', 'PLANTED_CUSTOM_SECRET'],
    });
    expect(leaks(p, JSON.stringify(status))).toEqual([]);
  });

  it('a write outside the workspace and a cut network come back as denials the model reads', async () => {
    const { p, h } = await planted({ config: { permissions: { allow_outside_workspace: true } } });
    const write = await h.call('bash', { command: `echo escaped > ${p.outside}; touch ${p.outside}-2` });
    expect(existsSync(p.outside)).toBe(false);
    expect(write.exit_code).not.toBe(0);
    expect(write.sandbox_denials).toEqual([
      expect.objectContaining({ kind: 'write_outside_workspace', source: 'sandbox', target: p.outside }),
      expect.objectContaining({
        kind: 'write_outside_workspace',
        source: 'sandbox',
        target: `${p.outside}-2`,
      }),
    ]);
    expect(h.modelText('bash', write)).toContain(
      `[sandbox: writing ${p.outside} was blocked: commands may only write inside the workspace (and a private /tmp). The user can allow that directory with options.sandbox.allow_write in svc.toml; otherwise write inside the workspace.]`,
    );
    const net = await h.call('bash', {
      command: `node -e "require('dns').lookup('example.com', (e) => { console.log(e ? 'lookup failed: ' + e.message : 'resolved'); process.exit(e ? 1 : 0) })"`,
    });
    expect(net.output).toContain('lookup failed');
    expect(net.sandbox_denials).toEqual([
      expect.objectContaining({ kind: 'network_off', source: 'sandbox' }),
    ]);
    expect(h.modelText('bash', net)).toContain(
      'the network is off for commands (options.sandbox.network = "none"), so this is not an outage',
    );
    const denied = h.events.filter((e) => e.type === 'sandbox_denied').map((e) => e.payload.kind);
    expect(denied).toEqual(['write_outside_workspace', 'write_outside_workspace', 'network_off']);
  });

  it('every tool refuses the data dir, the credential store and the deny list', async () => {
    const { p, h } = await planted({ config: { permissions: { allow_outside_workspace: true } } });
    await h.call('bash', { command: 'true' }); // the data dir exists
    const refusals: [string, Record<string, unknown>, string][] = [
      ['view', { path: '.svc/svc.db' }, 'is in '],
      ['view', { path: `${p.home}/.ssh/id_ed25519` }, 'is in ~/.ssh (SSH keys)'],
      ['view', { path: '~/.aws/credentials' }, 'is in ~/.aws (AWS credentials)'],
      ['view', { path: `${p.home}/.config/svc/credentials.json` }, "svc's credential store"],
      ['write', { path: '.svc/svc.db', content: 'x' }, "svc's data (svc.db)"],
      ['grep', { pattern: 'planted', path: `${p.home}/.ssh` }, 'is in ~/.ssh'],
      ['bash', { command: 'grep -a planted .svc/svc.db' }, 'names .svc/svc.db, which is in'],
      ['bash', { command: `cat ${p.home}/.netrc` }, 'which is in ~/.netrc'],
    ];
    for (const [tool, input, message] of refusals) {
      await expect(h.call(tool, input), `${tool} ${JSON.stringify(input)}`).rejects.toMatchObject({
        code: 'forbidden',
        message: expect.stringContaining(message),
      });
    }
    const grep = await h.call('grep', { pattern: 'planted' });
    expect(leaks(p, JSON.stringify(grep))).toEqual([]);
  });

  it('a timeout stops the whole sandbox, children included', async () => {
    const h = await toolHarness();
    const marker = `${7000 + Math.floor(Math.random() * 999)}.25`;
    const result = await h.call('bash', {
      command: `sleep ${marker} & sleep ${marker}; wait`,
      timeout_seconds: 1,
    });
    expect(result.timed_out).toBe(true);
    for (let i = 0; i < 150 && running(`sleep ${marker}`); i++) await sleep(100);
    expect(running(`sleep ${marker}`)).toBe(false);
  });

  it('auto without a usable bubblewrap falls back with one notice, and still scrubs the environment', async () => {
    const { p, h } = await planted({
      config: { options: { sandbox: { bwrap_path: '/nonexistent/bwrap' } } },
    });
    const status = await h.call('sandbox_status', {});
    expect(status).toMatchObject({
      mode: 'auto',
      state: 'fallback',
      enforced: false,
      reason: 'options.sandbox.bwrap_path /nonexistent/bwrap is not an executable file',
      install: 'apt-get install bubblewrap',
      notice:
        'no OS sandbox for commands: options.sandbox.bwrap_path /nonexistent/bwrap is not an executable file; bash runs under svc\'s parse-based rules only. Install bubblewrap: apt-get install bubblewrap (set options.sandbox.mode = "off" to silence this)',
    });
    const result = await h.call('bash', { command: 'env' });
    expect(h.events.map((e) => e.type)).not.toContain('sandbox_exec_started');
    expect(leaks(p, result.output)).toEqual([]);
    expect(result.output).not.toContain('SVC_SANDBOX');
  });
});
