import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { tmpWorkspace } from '../../test/helpers/tmp-workspace';
import { ensureDataDir } from './data-dir';
import { openDb } from './db';
import { migrations } from './migrations/index';
import { templatePath } from './template';

const git = (cwd: string, ...args: string[]) => execFileSync('git', args, { cwd, encoding: 'utf8' });

describe('data directory', () => {
  it('is its user only when svc makes it: the directory 0700, svc.db and its WAL 0600, with or without a template', () => {
    const mode = (path: string) => statSync(path).mode & 0o777;
    const old = process.umask(0o022);
    try {
      for (const templated of [false, true]) {
        const ws = tmpWorkspace();
        const dataDir = join(ws, '.svc');
        const templateDir = join(ws, 'templates');
        if (templated) openDb({ dataDir: join(ws, 'first'), templateDir }).close();
        if (templated) expect(existsSync(templatePath(templateDir, migrations))).toBe(true);
        const db = openDb({ dataDir, templateDir: templated ? templateDir : undefined });
        db.prepare(
          "INSERT INTO sessions (id, title, created_at, updated_at) VALUES ('ses_1', 't', 1, 1)",
        ).run();
        expect(mode(dataDir)).toBe(0o700);
        expect(mode(join(dataDir, 'svc.db'))).toBe(0o600);
        expect(mode(join(dataDir, 'svc.db-wal'))).toBe(0o600);
        db.close();
      }
    } finally {
      process.umask(old);
    }
  });

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
