/**
 * The `svc` command is bin/svc.cjs (issue 17): a CommonJS file that answers `--version` before
 * Node's ESM loader starts and hands every other command to the bundle (dist/main.js) with the
 * same argv, exit code and output.
 */
import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = resolve(__dirname, '../..');
const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
  version: string;
  bin: Record<string, string>;
  files: string[];
};
const COMMAND = join(ROOT, pkg.bin.svc);
const run = (...args: string[]) =>
  spawnSync(process.execPath, [COMMAND, ...args], { encoding: 'utf8', env: { ...process.env, HOME: ROOT } });

describe('the svc command (bin/svc.cjs)', () => {
  it('is the package bin and is published', () => {
    expect(pkg.bin.svc).toBe('bin/svc.cjs');
    expect(pkg.files).toContain('bin');
    expect(readFileSync(COMMAND, 'utf8').startsWith('#!/usr/bin/env node\n')).toBe(true);
  });

  it('--version and -v print the package version and load no bundle', () => {
    for (const flag of ['--version', '-v']) {
      const r = run(flag);
      expect(r.status).toBe(0);
      expect(r.stdout).toBe(`${pkg.version}\n`);
    }
    // Without a bundle next to it, --version still answers; any other command names the problem.
    const alone = mkdtempSync(join(tmpdir(), 'svc-bin-'));
    try {
      mkdirSync(join(alone, 'bin'));
      copyFileSync(COMMAND, join(alone, 'bin', 'svc.cjs'));
      copyFileSync(join(ROOT, 'package.json'), join(alone, 'package.json'));
      const bare = (arg: string) =>
        spawnSync(process.execPath, [join(alone, 'bin', 'svc.cjs'), arg], { encoding: 'utf8' });
      expect(bare('--version').stdout).toBe(`${pkg.version}\n`);
      const other = bare('models');
      expect(other.status).toBe(1);
      expect(other.stderr).toMatch(/^svc: Cannot find module .*dist\/main\.js/);
    } finally {
      rmSync(alone, { recursive: true, force: true });
    }
  });

  it('hands other commands to dist/main.js with their output and exit code', () => {
    const models = run('models', '--json');
    expect(models.status).toBe(0);
    expect(JSON.parse(models.stdout).object).toBe('list');
    const unknown = run('no-such-command');
    expect(unknown.status).toBe(2);
    expect(unknown.stderr).toContain("unknown command 'no-such-command'");
  });
});
