import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { isolatedEnv } from '../../test/helpers/make-test-app';
import { tmpWorkspace } from '../../test/helpers/tmp-workspace';
import { SvcError } from '../errors';
import { loadConfig } from './load';

function setup(files: Record<string, string>) {
  const workspace = tmpWorkspace({ files });
  return { workspace, env: isolatedEnv(workspace) };
}

describe('config merge at scale', () => {
  it('loads a table of 50,000 keys with every key traced to its file', () => {
    const lines = ['[models]', 'large = "acme/m"', '[options]', 'max_steps = 9'];
    for (let i = 0; i < 50_000; i++) lines.push(`extra_${i} = ${i}`);
    const { workspace, env } = setup({
      'svc.toml': `${lines.join('\n')}\n`,
      '.svc/svc.toml': '[options]\nextra_7 = "later"\n',
    });
    const loaded = loadConfig({ workspace, env });
    expect(loaded.config.options.max_steps).toBe(9);
    expect(Object.keys(loaded.raw.options as object)).toHaveLength(50_001);
    expect(loaded.provenance.get('options.extra_49999')?.path).toBe(join(workspace, 'svc.toml'));
    expect(loaded.provenance.get('options.extra_7')?.path).toBe(join(workspace, '.svc', 'svc.toml'));
    expect(loaded.warnings).toHaveLength(50_000);
  });

  it('forgets the sources of a table replaced by a scalar, and only those', () => {
    const { workspace, env } = setup({
      'svc.toml': '[options.x]\na = 1\n[options.x.deep]\nb = 2\n[options.xy]\nc = 3\n',
      '.svc/svc.toml': '[options]\nx = 5\n',
    });
    const loaded = loadConfig({ workspace, env });
    const keys = [...loaded.provenance.keys()].filter((k) => k.startsWith('options.'));
    expect(keys.sort()).toEqual(['options.x', 'options.xy.c']);
    expect(loaded.provenance.get('options.x')?.path).toBe(join(workspace, '.svc', 'svc.toml'));
  });
});

describe('config nesting', () => {
  const deepHeader = (levels: number) => `[options.${Array(levels).fill('a').join('.')}]\nx = 1\n`;
  const message = `options.a.a.a.a.a.…: nests deeper than 64 levels, the most svc reads; write it with fewer levels`;

  it('refuses a table 5,000 levels deep as a config error naming the file and the key', () => {
    const { workspace, env } = setup({ 'svc.toml': deepHeader(5000) });
    let error: unknown;
    try {
      loadConfig({ workspace, env });
    } catch (e) {
      error = e;
    }
    expect(SvcError.is(error)).toBe(true);
    expect((error as SvcError).exitCode).toBe(2);
    expect((error as SvcError).message).toBe(`config: ${join(workspace, 'svc.toml')}: ${message}`);
  });

  it('reports it in tolerant mode and loads the rest', () => {
    const { workspace, env } = setup({
      'svc.toml': deepHeader(5000),
      '.svc/svc.toml': '[options]\nmax_steps = 4\n',
    });
    const loaded = loadConfig({ workspace, env }, { tolerant: true });
    expect(loaded.errors).toEqual([
      { key: 'options.a.a.a.a.a.…', message, file: join(workspace, 'svc.toml') },
    ]);
    expect(loaded.files.find((f) => f.path === join(workspace, 'svc.toml'))?.error).toBe(message);
    expect(loaded.config.options.max_steps).toBe(4);
  });

  it('refuses a -c key path that deep', () => {
    const { workspace, env } = setup({});
    const key = `options.${Array(5000).fill('a').join('.')}`;
    expect(() => loadConfig({ workspace, env, overrides: [`${key}=1`] })).toThrowError(
      `config: -c ${message}`,
    );
  });

  it('reads a key path 64 parts long and refuses one of 65', () => {
    const { workspace, env } = setup({ 'svc.toml': deepHeader(62) });
    const loaded = loadConfig({ workspace, env });
    expect(loaded.warnings).toEqual([
      `unknown config key options.a (in ${join(workspace, 'svc.toml')}); ignored`,
    ]);
    expect(() =>
      loadConfig({ workspace, env: { ...env }, overrides: [`x.${Array(64).fill('a').join('.')}=1`] }),
    ).toThrow(/nests deeper than 64 levels/);
  });
});
