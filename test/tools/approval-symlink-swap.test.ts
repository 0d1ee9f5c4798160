/**
 * A file change is resolved (and checked to be inside the workspace) before its approval; a
 * directory on its path swapped for a symlink to outside while the approval is pending must not
 * carry the write outside: the change is refused after the approval, the outside file untouched.
 */
import { existsSync, readFileSync, renameSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { tmpWorkspace } from '../helpers/tmp-workspace';
import { toolHarness } from './harness';

describe('a directory swapped for a symlink during the approval', () => {
  const swap = (workspace: string, victim: string) => async () => {
    renameSync(join(workspace, 'd'), join(workspace, 'd.real'));
    symlinkSync(victim, join(workspace, 'd'));
  };

  it('refuses to create a file through it', async () => {
    const h = await toolHarness({ files: { 'd/keep.txt': 'keep\n' } });
    const victim = tmpWorkspace({ files: { 'other.txt': 'victim\n' } });
    const error = await h
      .call('write', { path: 'd/new.txt', content: 'planted\n' }, { ask: swap(h.app.workspace, victim) })
      .catch((e: unknown) => e);
    expect(existsSync(join(victim, 'new.txt'))).toBe(false);
    expect(error).toMatchObject({ code: 'conflict', details: { reason: 'moved_outside_during_approval' } });
  });

  it('refuses to overwrite a file through it, even one with the same content', async () => {
    const h = await toolHarness({ files: { 'd/a.txt': 'same\n' } });
    const victim = tmpWorkspace({ files: { 'a.txt': 'same\n' } });
    await h.call('view', { path: 'd/a.txt' });
    const error = await h
      .call(
        'edit',
        { path: 'd/a.txt', old_string: 'same', new_string: 'planted' },
        { ask: swap(h.app.workspace, victim) },
      )
      .catch((e: unknown) => e);
    expect(readFileSync(join(victim, 'a.txt'), 'utf8')).toBe('same\n');
    expect(String(error)).toMatch(/now resolves outside the workspace/);
  });

  it('TOOL-PROBE-1: refuses to write the next file of a change through a directory swapped after its first', async () => {
    // No approval to wait on (an MCP client's call): a background job swaps `d` while the change
    // is being written, here as soon as its first file is.
    const h = await toolHarness({ files: { 'd/keep.txt': 'keep\n' } });
    const victim = tmpWorkspace({ files: { 'other.txt': 'victim\n' } });
    let swapped = false;
    h.app.bus.subscribe('*', (event) => {
      if (event.type !== 'file.changed' || swapped) return;
      swapped = true;
      renameSync(join(h.app.workspace, 'd'), join(h.app.workspace, 'd.real'));
      symlinkSync(victim, join(h.app.workspace, 'd'));
    });
    const patch =
      '*** Begin Patch\n*** Add File: first.txt\n+one\n*** Add File: d/new.txt\n+planted\n*** End Patch';
    const error = await h.call('edit', { patch }).catch((e: unknown) => e);
    expect(swapped).toBe(true);
    expect(existsSync(join(victim, 'new.txt'))).toBe(false);
    expect(error).toMatchObject({ code: 'conflict' });
  });
});
