/**
 * `svc config set` and `svc config validate` give one answer (issue 16 item 8), through the built
 * binary: an unknown key elsewhere in svc.toml is a warning for both, so set writes; an unknown
 * key being set is refused; a real problem elsewhere refuses with its file, line and reason, and
 * validate reports the same problem.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runBin } from '../helpers/run-bin';
import { tmpWorkspace } from '../helpers/tmp-workspace';

const env = (ws: string) => ({ HOME: join(ws, '.home'), XDG_CONFIG_HOME: join(ws, '.home', '.config') });
const svc = (ws: string, ...args: string[]) => runBin(args, { cwd: ws, env: env(ws) });

describe('svc config set / validate: one validation, one answer', () => {
  it('a typo elsewhere does not stop config set options.max_steps 5; validate agrees', async () => {
    const ws = tmpWorkspace({
      files: { 'svc.toml': '[options]\nmax_step = 3\n\n[providrs.x]\nbase_url = "http://a"\n' },
    });
    const validate = await svc(ws, 'config', 'validate', '--json');
    expect(validate.code, validate.stderr).toBe(0);
    expect(JSON.parse(validate.stdout)).toMatchObject({ valid: true, errors: [] });
    expect(JSON.parse(validate.stdout).warnings.join('\n')).toContain('unknown config key options.max_step');

    const set = await svc(ws, 'config', 'set', 'options.max_steps', '5');
    expect(set.code, set.stderr).toBe(0);
    const text = readFileSync(join(ws, 'svc.toml'), 'utf8');
    expect(text).toContain('max_steps = 5');
    expect(text).toContain('max_step = 3');
    expect(text).toContain('[providrs.x]');
    const read = await svc(ws, 'config', 'get', 'options.max_steps', '--json');
    expect(read.stdout).toContain('5');
  });

  it('validate needs no store: an unreachable PostgreSQL URL is checked, not connected to, and no data dir is made', async () => {
    const ws = tmpWorkspace({
      files: {
        'svc.toml':
          '[store]\nurl = "postgres://u:pw-secret-77@127.0.0.1:1/db"\n\n[options]\nmax_steps = "x"\n',
      },
    });
    const validate = await svc(ws, 'config', 'validate', '--json');
    expect(validate.code, validate.stderr).toBe(2);
    expect(validate.stderr).toBe('');
    const report = JSON.parse(validate.stdout);
    expect(report.errors.map((e: { key: string }) => e.key)).toEqual(['options.max_steps']);
    expect(validate.stdout).not.toContain('pw-secret-77');
    expect(existsSync(join(ws, '.svc'))).toBe(false);
  });

  it('CLI-FIRST-3: validate checks --config <file> and -c too, as a run would load them (they were left out: valid, exit 0)', async () => {
    const ws = tmpWorkspace({ files: { 'svc.toml': '', 'extra.toml': '[options]\nmax_steps = "x"\n' } });
    const flagFile = await svc(ws, '--config', 'extra.toml', 'config', 'validate', '--json');
    expect(flagFile.code, flagFile.stderr).toBe(2);
    expect(JSON.parse(flagFile.stdout).errors).toMatchObject([
      { key: 'options.max_steps', file: join(ws, 'extra.toml'), line: 2 },
    ]);
    const override = await svc(ws, '-c', 'options.max_steps=0', 'config', 'validate', '--json');
    expect(override.code, override.stderr).toBe(2);
    expect(JSON.parse(override.stdout).errors).toMatchObject([
      { key: 'options.max_steps', file: '-c options.max_steps' },
    ]);
  });

  it('setting an unknown key is refused, naming it', async () => {
    const ws = tmpWorkspace({ files: { 'svc.toml': '[options]\nmax_steps = 3\n' } });
    const set = await svc(ws, 'config', 'set', 'options.max_stepz', '5');
    expect(set.code).toBe(2);
    expect(set.stderr).toContain(
      'svc: config: refusing to write options.max_stepz: options: unknown key max_stepz',
    );
    expect(readFileSync(join(ws, 'svc.toml'), 'utf8')).toBe('[options]\nmax_steps = 3\n');
  });

  it('a real problem elsewhere: set names its line and why, and validate reports the same', async () => {
    const ws = tmpWorkspace({
      files: { 'svc.toml': '[options]\nmax_steps = 3\n\n[providers.x]\nbase_url = 42\n' },
    });
    const validate = await svc(ws, 'config', 'validate', '--json');
    expect(validate.code).toBe(2);
    const line = 'svc.toml:5: providers.x.base_url: expected string, got number 42';
    const report = JSON.parse(validate.stdout);
    expect(report.valid).toBe(false);
    expect(report.errors.map((e: { text: string }) => e.text)).toEqual([`config: ${join(ws, line)}`]);
    const set = await svc(ws, 'config', 'set', 'options.max_steps', '5');
    expect(set.code).toBe(2);
    expect(set.stderr).toBe(`svc: ${report.errors[0].text}\n`);
    expect(readFileSync(join(ws, 'svc.toml'), 'utf8')).toContain('max_steps = 3');
    expect(set.stderr.trim().split('\n')).toHaveLength(1);
  });
});
