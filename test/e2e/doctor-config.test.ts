/**
 * `svc doctor` with a broken svc.toml, through the built binary: the config is one failed check
 * (file, line, problem, what to run) and the checks that need no config still run (it ended with
 * the config error, exit 2, like any command, and checked nothing).
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runBin } from '../helpers/run-bin';
import { tmpWorkspace } from '../helpers/tmp-workspace';

const env = (ws: string) => ({ HOME: join(ws, '.home'), XDG_CONFIG_HOME: join(ws, '.home', '.config') });

describe('svc doctor with a broken config', () => {
  it('CLI-FIRST-7: bad TOML, a wrong type, an unknown store scheme: a failed config check, the rest run, exit 1', {
    timeout: 120_000,
  }, async () => {
    const ws = tmpWorkspace();
    const file = join(ws, 'svc.toml');
    for (const [text, problem] of [
      ['[options\nmax_steps = 3\n', `${file}:1: TOML syntax error`],
      ['[options]\nmax_steps = "x"\n', `${file}:2: options.max_steps: expected number, got string "x"`],
      [
        '[store]\nurl = "mysql://u:pw@h/db"\n',
        `${file}:2: store.url: expected a postgres:// or postgresql:// URL`,
      ],
    ] as const) {
      writeFileSync(file, text);
      const result = await runBin(['doctor'], { cwd: ws, env: env(ws) });
      expect(result.code, text).toBe(1);
      expect(result.stderr, text).toBe('');
      const lines = result.stdout.split('\n');
      expect(lines[0]).toBe('svc doctor: problems found');
      expect(lines[1]).toMatch(/^ {2}✗ config {5}/);
      expect(lines[1]).toContain(problem);
      expect(lines[1]).toContain('svc config validate');
      for (const name of ['data_dir', 'database', 'sandbox', 'node'])
        expect(result.stdout, `${text}: ${name}`).toMatch(new RegExp(`^ {2}. ${name} `, 'm'));
    }
    // --json: the same report shape, the config one more entry in checks.
    writeFileSync(file, '[options]\nmax_steps = "x"\n');
    const json = await runBin(['doctor', '--json'], { cwd: ws, env: env(ws) });
    expect(json.code).toBe(1);
    const report = JSON.parse(json.stdout);
    expect(report).toMatchObject({ ok: false, data_dir: join(ws, '.svc'), database: expect.any(Object) });
    expect(report.sandbox).toHaveProperty('state');
    expect(report.checks.map((c: { name: string }) => c.name)).toEqual([
      'config',
      'data_dir',
      'database',
      'sandbox',
      'node',
    ]);
    expect(report.checks[0]).toMatchObject({
      status: 'error',
      detail: expect.stringContaining(`${file}:2:`),
    });
  });

  it('CLI-FIRST-7: a secret the config error quotes is redacted; a valid config is an ok check; --store keeps the error', async () => {
    const ws = tmpWorkspace({ files: { 'svc.toml': '[options]\nmax_steps = "${MY_API_KEY}"\n' } });
    const secret = 'sk-doctor-secret-8f3a1c';
    const result = await runBin(['doctor', '--json'], { cwd: ws, env: { ...env(ws), MY_API_KEY: secret } });
    expect(result.code).toBe(1);
    expect(result.stdout).not.toContain(secret);
    expect(JSON.parse(result.stdout).checks[0]).toMatchObject({ name: 'config', status: 'error' });
    // --store needs the config to know which store to check: the config error stands.
    const store = await runBin(['doctor', '--store'], { cwd: ws, env: { ...env(ws), MY_API_KEY: secret } });
    expect(store.code).toBe(2);
    expect(store.stderr).toContain('options.max_steps');
    expect(store.stderr).not.toContain(secret);
    writeFileSync(join(ws, 'svc.toml'), '[options]\nmax_steps = 3\n');
    const ok = await runBin(['doctor'], { cwd: ws, env: env(ws) });
    expect(ok.stdout).toContain(`✓ config     valid: ${join(ws, 'svc.toml')}`);
  });
});
