import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { tmpWorkspace } from '../../test/helpers/tmp-workspace';
import { ensureDataDir } from './data-dir';
import { openDb } from './db';

const git = (cwd: string, ...args: string[]) => execFileSync('git', args, { cwd, encoding: 'utf8' });

describe('data directory', () => {
  it('keeps svc data out of git status but not the workspace config', () => {
    const ws = tmpWorkspace();
    git(ws, 'init', '-q');
    const dataDir = join(ws, '.svc');
    openDb({ dataDir }).close();
    // Only svc's own data: the workspace stays clean.
    expect(git(ws, 'status', '--porcelain', '--untracked-files=all')).toBe('');
    mkdirSync(join(dataDir, 'packs', 'review'), { recursive: true });
    writeFileSync(join(dataDir, 'packs', 'review', 'pack.toml'), 'name = "review"\n');
    writeFileSync(join(dataDir, 'svc.toml'), '[options]\n');
    mkdirSync(join(dataDir, 'logs'));
    writeFileSync(join(dataDir, 'logs', 'svc.log'), '{}\n');
    const status = git(ws, 'status', '--porcelain', '--untracked-files=all').split('\n').filter(Boolean);
    expect(status.sort()).toEqual(['?? .svc/packs/review/pack.toml', '?? .svc/svc.toml'].sort());
  });

  it('leaves a directory that already exists as it is', () => {
    const ws = tmpWorkspace();
    const mine = join(ws, 'mine');
    mkdirSync(mine);
    ensureDataDir(mine);
    expect(existsSync(join(mine, '.gitignore'))).toBe(false);
    const fresh = join(ws, 'fresh', 'nested');
    ensureDataDir(fresh);
    expect(readFileSync(join(fresh, '.gitignore'), 'utf8')).toContain('!svc.toml');
  });
});
