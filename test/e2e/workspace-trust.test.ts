/**
 * Workspace trust with the built binary (config/trust.ts): `svc trust` remembers, lists and
 * revokes a workspace in the user's config dir; under `security.workspace_trust = "require"` a
 * headless `svc run` in an untrusted workspace does not start the workspace's stdio MCP server
 * (whose command would create a marker file) and says why, and does after `svc trust`. The
 * default ("ask") leaves headless runs as they were, with a note on stderr naming the keys used.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { fakeProvider, reply } from '../helpers/fake-provider';
import { runBin } from '../helpers/run-bin';
import { tmpWorkspace } from '../helpers/tmp-workspace';

const env = (home: string) => ({ HOME: home, XDG_CONFIG_HOME: join(home, '.config') });

/** A user home outside the workspace, so the workspace holds nothing of the trust store. */
function setup(providerUrl: string) {
  const home = tmpWorkspace();
  const ws = tmpWorkspace();
  const marker = join(ws, 'mcp-ran');
  writeFileSync(
    join(ws, 'svc.toml'),
    [
      '[providers.fake]',
      'type = "openai-compat"',
      `base_url = "${providerUrl}"`,
      '[models]',
      'large = "fake/m1"',
      '[mcp.marker]',
      'command = "sh"',
      `args = ["-c", "touch '${marker}'"]`,
      '',
    ].join('\n'),
  );
  return { home, ws, marker };
}

function requireMode(home: string) {
  mkdirSync(join(home, '.config', 'svc'), { recursive: true });
  writeFileSync(join(home, '.config', 'svc', 'svc.toml'), '[security]\nworkspace_trust = "require"\n');
}

describe('workspace trust', () => {
  it('svc trust remembers the workspace by real path, lists and revokes it', async () => {
    const home = tmpWorkspace();
    const ws = tmpWorkspace({ files: { 'svc.toml': '[permissions]\nallowed_tools = ["bash"]\n' } });
    const trusted = await runBin(['trust'], { cwd: ws, env: env(home) });
    expect(trusted.code, trusted.stderr).toBe(0);
    expect(trusted.stdout).toContain(`trusted: ${ws}`);
    expect(trusted.stdout).toContain('permissions.allowed_tools = ["bash"]');
    const store = join(home, '.config', 'svc', 'trusted-workspaces.json');
    expect(Object.keys(JSON.parse(readFileSync(store, 'utf8')).workspaces)).toEqual([ws]);
    expect(existsSync(join(ws, '.svc'))).toBe(false);

    const list = await runBin(['trust', '--list', '--json'], { cwd: home, env: env(home) });
    expect(JSON.parse(list.stdout).workspaces).toEqual([{ path: ws, trusted_at: expect.any(String) }]);
    const revoked = await runBin(['trust', '--revoke', ws], { cwd: home, env: env(home) });
    expect(revoked).toMatchObject({ code: 0, stdout: `no longer trusted: ${ws}\n` });
    const empty = await runBin(['trust', '--list'], { cwd: home, env: env(home) });
    expect(empty.stdout).toMatch(/^no trusted workspaces/);

    const missing = await runBin(['trust', join(ws, 'nope')], { cwd: home, env: env(home) });
    expect(missing.code).toBe(2);
    expect(missing.stderr).toMatch(/is not a directory/);
  });

  it('require: an untrusted workspace keeps its MCP command from running until svc trust', async () => {
    const provider = await fakeProvider([reply().text('first'), reply().text('second')]);
    const { home, ws, marker } = setup(provider.url);
    requireMode(home);

    const refused = await runBin(['run', 'hello'], { cwd: ws, env: env(home) });
    expect(refused.code, refused.stderr).toBe(0);
    expect(refused.stdout).toBe('first\n');
    expect(refused.stderr).toContain(`workspace ${ws} is not trusted`);
    expect(refused.stderr).toContain(`svc trust ${ws}`);
    expect(existsSync(marker)).toBe(false);

    expect((await runBin(['trust'], { cwd: ws, env: env(home) })).code).toBe(0);
    const trusted = await runBin(['run', 'hello'], { cwd: ws, env: env(home) });
    expect(trusted.stdout).toBe('second\n');
    expect(trusted.stderr).not.toContain('not trusted');
    expect(existsSync(marker)).toBe(true);
  });

  it('ask (the default): a headless run uses the workspace keys as before, and says so on stderr', async () => {
    const provider = await fakeProvider([reply().text('done'), reply().text('again')]);
    const { home, ws, marker } = setup(provider.url);
    const result = await runBin(['run', 'hello'], { cwd: ws, env: env(home) });
    expect(result).toMatchObject({ code: 0, stdout: 'done\n' });
    expect(result.stderr).toContain(
      `svc: note: workspace ${ws} is not trusted and its config sets mcp.marker`,
    );
    expect(result.stderr).toContain(`svc trust ${ws}`);
    expect(existsSync(marker)).toBe(true);

    expect((await runBin(['trust'], { cwd: ws, env: env(home) })).code).toBe(0);
    const trusted = await runBin(['run', 'hello'], { cwd: ws, env: env(home) });
    expect(trusted).toMatchObject({ code: 0, stdout: 'again\n' });
    expect(trusted.stderr).not.toContain('not trusted');
  });

  it("ask: the note shows a key name's control characters, so a workspace cannot add a line of its own", async () => {
    const provider = await fakeProvider([reply().text('done')]);
    const { home, ws } = setup(provider.url);
    writeFileSync(
      join(ws, 'svc.toml'),
      `${readFileSync(join(ws, 'svc.toml'), 'utf8')}[mcp."zz\\rsvc: note: nothing untrusted is used"]\ncommand = "true"\n`,
    );
    const result = await runBin(['run', 'hello'], { cwd: ws, env: env(home) });
    expect(result).toMatchObject({ code: 0, stdout: 'done\n' });
    const lines = result.stderr.split('\n').filter(Boolean);
    expect(lines.filter((l) => l.startsWith('svc: note:'))).toHaveLength(1);
    expect(result.stderr).toContain('mcp.zz^Msvc: note: nothing untrusted is used');
  });
});
