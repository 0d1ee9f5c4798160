/**
 * The built binary, as a stranger runs it: version, help, provenance across sources, and exit
 * codes for bad input (0 ok, 1 runtime failure, 2 usage or config error).
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runBin } from '../helpers/run-bin';
import { tmpWorkspace } from '../helpers/tmp-workspace';

function env(ws: string, extra: Record<string, string> = {}) {
  return { HOME: join(ws, '.home'), XDG_CONFIG_HOME: join(ws, '.home', '.config'), ...extra };
}

describe('svc binary', () => {
  it('GEN-02: prints its version and help', async () => {
    const ws = tmpWorkspace();
    const version = await runBin(['--version'], { cwd: ws, env: env(ws) });
    expect(version).toMatchObject({ code: 0, stderr: '' });
    expect(version.stdout).toMatch(/^\d+\.\d+\.\d+/);
    const help = await runBin(['--help'], { cwd: ws, env: env(ws) });
    expect(help.code).toBe(0);
    expect(help.stdout).toContain('--data-dir <dir>');
    expect(help.stdout).toContain('config');
    expect(existsSync(join(ws, '.svc'))).toBe(false);
  });

  it('CLI-09: config explain --json shows each field source across global, workspace, env and -c', async () => {
    const ws = tmpWorkspace({
      files: {
        'svc.toml': '[options]\nmax_steps = 9\n[providers.acme]\nbase_url = "http://127.0.0.1:1/v1"\n',
        '.home/.config/svc/svc.toml':
          '[options]\nauto_compact = false\n[providers.acme]\napi_key = "secret-global-key-123456"\n',
      },
    });
    const result = await runBin(['config', 'explain', '--json', '-c', 'options.disabled_tools=["bash"]'], {
      cwd: ws,
      env: env(ws, { SVC_MODEL: 'acme/big' }),
    });
    expect(result.code, result.stderr).toBe(0);
    const fields = (
      JSON.parse(result.stdout) as {
        fields: { key: string; source: string; source_kind: string; value: unknown }[];
      }
    ).fields;
    const get = (key: string) => fields.find((f) => f.key === key);
    expect(get('options.auto_compact')).toMatchObject({
      source_kind: 'global',
      source: join(ws, '.home/.config/svc/svc.toml'),
    });
    expect(get('options.max_steps')).toMatchObject({
      value: 9,
      source_kind: 'workspace',
      source: join(ws, 'svc.toml'),
    });
    expect(get('models.large')).toMatchObject({
      value: 'acme/big',
      source_kind: 'env',
      source: 'env SVC_MODEL',
    });
    expect(get('options.disabled_tools')).toMatchObject({ value: ['bash'], source_kind: 'override' });
    expect(get('providers.acme.api_key')?.value).not.toContain('secret-global-key');
    expect(result.stdout).not.toContain('secret-global-key-123456');
  });

  it('exits 2 with one clear line for malformed TOML, and changes nothing', async () => {
    const ws = tmpWorkspace({ files: { 'svc.toml': '[options\nmax_steps = 1\n' } });
    const result = await runBin(['config', 'show-config-status'], { cwd: ws, env: env(ws) });
    expect(result.code).toBe(2);
    expect(result.stderr.trim().split('\n')).toHaveLength(1);
    expect(result.stderr).toMatch(/^svc: config: .*svc\.toml:1: TOML syntax error/);
    expect(result.stderr).not.toMatch(/\n\s+at /);
    expect(readFileSync(join(ws, 'svc.toml'), 'utf8')).toBe('[options\nmax_steps = 1\n');
  });

  it('exits 2 for a wrong type, an unset ${VAR} and an unknown flag', async () => {
    const ws = tmpWorkspace({ files: { 'svc.toml': '[options]\nmax_steps = "lots"\n' } });
    const wrongType = await runBin(['config', 'explain'], { cwd: ws, env: env(ws) });
    expect(wrongType.code).toBe(2);
    expect(wrongType.stderr).toContain('options.max_steps: expected number');

    writeFileSync(join(ws, 'svc.toml'), '[providers.x]\napi_key = "${UNSET_THING}"\n');
    const unset = await runBin(['config', 'explain'], { cwd: ws, env: env(ws) });
    expect(unset.code).toBe(2);
    expect(unset.stderr).toContain('UNSET_THING is not set');

    const flag = await runBin(['config', 'explain', '--nope'], { cwd: ws, env: env(ws) });
    expect(flag.code).toBe(2);
    expect(flag.stderr).toContain("unknown option '--nope'");

    // An unknown command is named (not "too many arguments"); a subcommand still refuses extras.
    const command = await runBin(['nosuch'], { cwd: ws, env: env(ws) });
    expect(command.code).toBe(2);
    expect(command.stderr).toContain("svc: unknown command 'nosuch'");
    const extra = await runBin(['session', 'status', 'extra'], { cwd: ws, env: env(ws) });
    expect(extra.code).toBe(2);
    expect(extra.stderr).toContain('too many arguments');
  });

  it('reports a corrupt database clearly (status: as data; a command needing it: exit 1) and leaves it as it was', async () => {
    const ws = tmpWorkspace();
    mkdirSync(join(ws, '.svc'));
    writeFileSync(join(ws, '.svc', 'svc.db'), 'garbage'.repeat(500));
    const result = await runBin(['config', 'show-config-status', '--json'], { cwd: ws, env: env(ws) });
    expect(result.code).toBe(0);
    const status = JSON.parse(result.stdout) as { database: { error: string } };
    expect(status.database.error).toMatch(/corrupt or not an SQLite database/);
    const needsDb = await runBin(['tools', '--session-id', 'ses_x'], { cwd: ws, env: env(ws) });
    expect(needsDb.code).toBe(1);
    expect(needsDb.stderr).toMatch(
      /^svc: database .*svc\.db is corrupt or not an SQLite database; it was left untouched/,
    );
    expect(readFileSync(join(ws, '.svc', 'svc.db'), 'utf8')).toBe('garbage'.repeat(500));
  });

  it('config set writes the workspace file atomically and refuses invalid values', async () => {
    const ws = tmpWorkspace();
    const ok = await runBin(['config', 'set', 'options.max_steps', '12', '--json'], {
      cwd: ws,
      env: env(ws),
    });
    expect(ok.code, ok.stderr).toBe(0);
    expect(readFileSync(join(ws, 'svc.toml'), 'utf8')).toContain('max_steps = 12');
    const bad = await runBin(['config', 'set', 'options.max_steps', 'lots'], { cwd: ws, env: env(ws) });
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('refusing to write options.max_steps');
    expect(readFileSync(join(ws, 'svc.toml'), 'utf8')).toContain('max_steps = 12');
  });
});
