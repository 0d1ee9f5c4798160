/**
 * A file the file tools read is checked (inside the workspace, not a protected location) and then
 * opened; a command running meanwhile (a background job of the agent's) could swap it for a
 * symlink to a file outside between the two. The open must reach the file that was checked: a
 * swapped one is refused (`conflict`, reason `moved_during_read`) and nothing of it is returned.
 */
import { mkdirSync, renameSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { readTarget } from '../../src/workspace/file-load';
import { createPathResolver } from '../../src/workspace/paths';
import { tmpWorkspace } from '../helpers/tmp-workspace';

describe('a file swapped for a symlink between its check and its read', () => {
  const setup = () => {
    const workspace = tmpWorkspace({ files: { 'notes.txt': 'mine\n', 'd/inner.txt': 'inner\n' } });
    const outside = tmpWorkspace({ files: { 'secret.txt': 'SECRET-OUTSIDE\n' } });
    const paths = createPathResolver({ root: workspace, allowOutside: () => false });
    return { workspace, outside, paths };
  };

  it('READ-SWAP-1: the file itself swapped: refused, the outside file not read', () => {
    const { workspace, outside, paths } = setup();
    const target = paths.resolve('notes.txt');
    expect(readTarget(target, 'path').toString()).toBe('mine\n');
    renameSync(join(workspace, 'notes.txt'), join(workspace, 'notes.old'));
    symlinkSync(join(outside, 'secret.txt'), join(workspace, 'notes.txt'));
    let read: Buffer | undefined;
    let error: unknown;
    try {
      read = readTarget(target, 'path');
    } catch (e) {
      error = e;
    }
    expect(read?.toString()).toBeUndefined();
    expect(error).toMatchObject({ code: 'conflict', details: { reason: 'moved_during_read' } });
    expect(String(error)).not.toContain('SECRET');
  });

  it('READ-SWAP-2: a directory on its path swapped: refused too; an unswapped path reads as before', () => {
    const { workspace, outside, paths } = setup();
    const target = paths.resolve('d/inner.txt');
    renameSync(join(workspace, 'd'), join(workspace, 'd.real'));
    mkdirSync(join(outside, 'd'));
    renameSync(join(outside, 'secret.txt'), join(outside, 'd', 'inner.txt'));
    symlinkSync(join(outside, 'd'), join(workspace, 'd'));
    expect(() => readTarget(target, 'path')).toThrow(/changed while it was being read/);
    // Resolved now, the path is outside and refused before any read; the workspace's own files read.
    expect(() => paths.resolve('d/inner.txt')).toThrow(/outside the workspace/);
    expect(readTarget(paths.resolve('d.real/inner.txt'), 'path').toString()).toBe('inner\n');
  });
});
