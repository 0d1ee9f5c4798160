import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { isolatedEnv } from '../../test/helpers/make-test-app';
import { tmpWorkspace } from '../../test/helpers/tmp-workspace';
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
