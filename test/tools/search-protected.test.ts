/**
 * grep, glob, ls and search never show a protected location (docs/permissions.md#paths), whatever
 * glob the caller gives. ripgrep's own hiding was an ignore file, and a `--glob` overrides ignore
 * files: `grep {glob: "*"}` printed `~/.ssh/id_ed25519` of a workspace that is the home directory.
 * Now the hidden entries also follow every caller's glob as `--glob '!…'`, and each path ripgrep
 * answers with goes through the check `view` refuses with.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { isolatedEnv } from '../helpers/make-test-app';
import { tmpWorkspace } from '../helpers/tmp-workspace';
import { toolHarness } from './harness';

const SECRETS = {
  '.ssh/id_ed25519': 'PRIVATE KEY\n',
  '.aws/credentials': 'SECRET=1\n',
  '.config/svc/credentials.json': '{"k":"SECRET"}\n',
  '.svc/logs/svc.log': 'SECRET in a log\n',
};

/** Every path a search result names. */
function pathsOf(result: Record<string, unknown>): string[] {
  const out: string[] = [];
  for (const key of ['files', 'matches', 'counts'] as const) {
    for (const item of (result[key] as (string | { path: string })[] | undefined) ?? []) {
      out.push(typeof item === 'string' ? item : item.path);
    }
  }
  return out;
}

describe('searches and protected locations', () => {
  it('grep, glob, ls and search with a caller glob leave the home dir secrets, the credential store, the data dir and .git alone', async () => {
    // The workspace is the home directory: ~/.ssh, ~/.aws and ~/.config/svc are in it.
    const ws = tmpWorkspace({
      files: { ...SECRETS, 'src/a.txt': 'SECRET (not a secret)\n' },
      git: true,
    });
    const env = isolatedEnv(ws, { HOME: ws, XDG_CONFIG_HOME: join(ws, '.config') });
    const h = await toolHarness({ workspace: ws, env });
    const seen: string[] = [];
    const pattern = 'SECRET|PRIVATE';
    // The globs that match src/a.txt, then globs that name nothing but protected files.
    const matching = [undefined, '*', '**', '**/*'];
    for (const glob of [...matching, '.ssh/*', '**/credentials*', '!src/**', '.svc/**']) {
      const found = matching.includes(glob) ? ['src/a.txt'] : [];
      for (const output_mode of ['content', 'files', 'count'] as const) {
        const result = await h.call('grep', { pattern, glob, output_mode });
        seen.push(...pathsOf(result));
        expect(pathsOf(result), `${glob} ${output_mode}`).toEqual(found);
        expect(result.total).toBe(found.length);
      }
      seen.push(...pathsOf(await h.call('search', { mode: 'text', pattern, glob })));
    }
    for (const pattern of ['**', '*', '.ssh/*', '**/*credentials*', '.svc/**', '.git/**']) {
      seen.push(...pathsOf(await h.call('glob', { pattern })));
    }
    expect((await h.call('glob', { pattern: '**' })).files).toEqual(['src/a.txt']);
    const ls = await h.call('ls', { ignore: ['!.ssh/**', '!.git/**'] });
    expect(ls.tree).not.toMatch(/\.ssh|\.aws|\.config|\.svc|\.git\b|id_ed25519/);
    expect(ls.files).toBe(1);
    expect(seen.filter((p) => p !== 'src/a.txt')).toEqual([]);
  });

  it('outside the workspace (allow_outside_workspace) a search of the home directory leaves its secrets out', async () => {
    // ripgrep's hiding is relative to the workspace: here the check every result goes through is all.
    const { '.svc/logs/svc.log': _, ...inHome } = SECRETS;
    const home = tmpWorkspace({ files: { ...inHome, 'notes.txt': 'SECRET plan\n' } });
    mkdirSync(join(home, '.config', 'gcloud'), { recursive: true });
    writeFileSync(join(home, '.config', 'gcloud', 'adc.json'), 'SECRET\n');
    const ws = tmpWorkspace({ files: { 'a.txt': 'a\n' } });
    const env = isolatedEnv(ws, { HOME: home, XDG_CONFIG_HOME: join(home, '.config') });
    const h = await toolHarness({
      workspace: ws,
      env,
      config: { permissions: { allow_outside_workspace: true } },
    });
    for (const output_mode of ['content', 'files', 'count'] as const) {
      const result = await h.call('grep', { pattern: 'SECRET|PRIVATE', path: home, output_mode, glob: '*' });
      expect(pathsOf(result), output_mode).toEqual([join(home, 'notes.txt')]);
    }
    expect((await h.call('glob', { pattern: '**', path: home })).files).toEqual([join(home, 'notes.txt')]);
    expect((await h.call('ls', { path: home })).files).toBe(1);
  });
});
