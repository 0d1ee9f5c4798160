/**
 * A refused change is not a success (issue 16 item 6), the way a user meets it: the built binary
 * without a terminal against the scripted fake provider. Pins:
 * - `svc run` whose edit needed permission with nobody to answer exits 3, says `svc: run refused`
 *   with the next step, and its JSON result carries `refused` with the tool and the reason;
 * - a step limit exits 1 with the limit named;
 * - `svc schedule run` reports the outcome `refused` (exit 3) and the schedule records it.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { fakeProvider, reply } from '../helpers/fake-provider';
import { runBin } from '../helpers/run-bin';
import { tmpWorkspace } from '../helpers/tmp-workspace';

const editScript = () => [
  reply().toolCall('view', { path: 'hello.txt' }),
  reply().toolCall('edit', { path: 'hello.txt', old_string: 'hello world', new_string: 'goodbye world' }),
  reply().text('I updated hello.txt.'),
];

function workspace(providerUrl: string) {
  const ws = tmpWorkspace({ files: { 'hello.txt': 'hello world\n' } });
  writeFileSync(
    join(ws, 'svc.toml'),
    `[providers.fake]\ntype = "openai-compat"\nbase_url = "${providerUrl}"\n[models]\nlarge = "fake/m1"\n[options.sandbox]\nmode = "off"\n`,
  );
  return ws;
}

const env = (ws: string) => ({
  HOME: join(ws, '.home'),
  XDG_CONFIG_HOME: join(ws, '.home', '.config'),
  XDG_DATA_HOME: join(ws, '.home', '.local', 'share'),
});

describe('a refused change is reported, not done', () => {
  it('CLI-FIRST-11: svc run exits 3 and says refused once, with the tool, the reason and the next step', async () => {
    const provider = await fakeProvider(editScript());
    const ws = workspace(provider.url);
    const result = await runBin(['run', 'update hello.txt'], { cwd: ws, env: env(ws) });
    expect(result.code, result.stderr).toBe(3);
    expect(result.stdout).toContain('I updated hello.txt.');
    expect(result.stderr).toContain(
      'svc: run refused: edit needed permission and no one was there to answer; the change was not made',
    );
    expect(result.stderr).toMatch(
      /svc: next: re-run with --yolo, add "edit" to \[permissions\]\.allowed_tools/,
    );
    // CLI-FIRST-11: said once, at the end (the refused call's own line repeated it before).
    expect(result.stderr.match(/edit needed permission/g)).toHaveLength(1);
    expect(result.stderr.match(/re-run with --yolo/g)).toHaveLength(1);
    expect(readFileSync(join(ws, 'hello.txt'), 'utf8')).toBe('hello world\n');
  });

  it('svc run --json carries refused with the tool and the reason; --output json is the same', async () => {
    for (const flags of [['--json'], ['--output', 'json']]) {
      const provider = await fakeProvider(editScript());
      const ws = workspace(provider.url);
      const result = await runBin(['run', ...flags, 'update hello.txt'], { cwd: ws, env: env(ws) });
      expect(result.code, result.stderr).toBe(3);
      const body = JSON.parse(result.stdout);
      expect(body).toMatchObject({
        status: 'completed',
        refused: { tool: 'edit', reason: 'unattended', code: 'tool_refused' },
      });
    }
  });

  it('a run that completes without a refusal has refused null and exits 0', async () => {
    const provider = await fakeProvider([reply().text('nothing to change')]);
    const ws = workspace(provider.url);
    const result = await runBin(['run', '--json', 'look only'], { cwd: ws, env: env(ws) });
    expect(result.code, result.stderr).toBe(0);
    expect(JSON.parse(result.stdout).refused).toBeNull();
  });

  it('a step limit exits 1 and names the limit', async () => {
    const provider = await fakeProvider([reply().toolCall('view', { path: 'hello.txt' })]);
    const ws = workspace(provider.url);
    const result = await runBin(['run', '--max-steps', '1', 'read it'], { cwd: ws, env: env(ws) });
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('svc: run failed: step limit reached: 1 steps');
  });

  it('svc schedule run reports and records refused, exit 3', async () => {
    const provider = await fakeProvider(editScript());
    const ws = workspace(provider.url);
    const created = await runBin(
      ['schedule', 'create', 'greet', '--prompt', 'update hello.txt', '--at', '+1h', '--json'],
      { cwd: ws, env: env(ws) },
    );
    expect(created.code, created.stderr).toBe(0);
    const id = JSON.parse(created.stdout).schedule.id as string;
    const ran = await runBin(['schedule', 'run', id, '--json'], { cwd: ws, env: env(ws) });
    expect(ran.code, ran.stderr).toBe(3);
    const body = JSON.parse(ran.stdout);
    expect(body.outcome).toBe('refused');
    expect(body.result.refused).toMatchObject({ tool: 'edit', reason: 'unattended' });
    const inspected = await runBin(['schedule', 'inspect', id, '--json'], { cwd: ws, env: env(ws) });
    const shown = JSON.parse(inspected.stdout);
    expect(shown.schedule.last_status).toBe('refused');
    expect(shown.schedule.last_error).toContain('edit needed permission');
    expect(readFileSync(join(ws, 'hello.txt'), 'utf8')).toBe('hello world\n');
  });
});
