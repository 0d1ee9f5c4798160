import { mkdirSync, realpathSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { tmpWorkspace } from '../../test/helpers/tmp-workspace';
import { createPathResolver } from './paths';

describe('path resolver', () => {
  it('resolves inside paths to workspace-relative form and refuses escapes', () => {
    const root = tmpWorkspace({ files: { 'src/a.ts': '' } });
    const outside = tmpWorkspace({ files: { 'x.txt': '' } });
    mkdirSync(join(root, 'real'));
    symlinkSync(join(root, 'real'), join(root, 'inner-link'));
    symlinkSync(outside, join(root, 'outer-link'));
    const paths = createPathResolver({ root, home: '/home/u', allowOutside: () => false });
    expect(paths.resolve('src/a.ts')).toEqual({
      abs: join(root, 'src/a.ts'),
      rel: 'src/a.ts',
      inside: true,
      real: join(realpathSync(root), 'src/a.ts'),
    });
    expect(paths.resolve('inner-link/file.ts').real).toBe(join(realpathSync(root), 'real/file.ts'));
    expect(paths.resolve('.').rel).toBe('.');
    expect(paths.resolve(join(root, 'src', '..', 'src', 'new.ts')).rel).toBe('src/new.ts');
    expect(paths.resolve('inner-link/file.ts').rel).toBe('inner-link/file.ts');
    expect(() => paths.resolve('../x')).toThrow(/is outside the workspace/);
    expect(() => paths.resolve('~/x')).toThrow(/~\/x is outside the workspace/);
    expect(() => paths.resolve('outer-link/x.txt')).toThrow(
      /resolves through a symlink to .*x\.txt, which is outside/,
    );
    expect(() => paths.resolve('outer-link/not/yet/there.txt')).toThrow(/symlink/);
    expect(() => paths.resolve('', 'file')).toThrow('file: a path is required');
    expect(() => paths.resolve('a\0b')).toThrow(/NUL byte/);
  });

  it('lets outside paths through when allowed, reporting them absolute', () => {
    const root = tmpWorkspace();
    const paths = createPathResolver({ root, allowOutside: () => true });
    expect(paths.resolve('/etc/hostname')).toEqual({
      abs: '/etc/hostname',
      rel: '/etc/hostname',
      inside: false,
      real: realpathSync('/etc/hostname'),
    });
  });
});
