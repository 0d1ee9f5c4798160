/**
 * A FIFO (or socket, or device) where a file tool expects a file. Reading one with `readFileSync`
 * waits until something writes to it, and with it the whole process: one `view` of a named pipe a
 * command had made in the workspace froze svc, every session and request of a service included.
 * The file tools now refuse it at once, naming what it is (`readRegularFile`,
 * src/workspace/file-io.ts). Against a regression the test does not hang: a writer opens and
 * closes each FIFO after 30 s, which would end a blocked read (and fail the test).
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { realpathSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { fileOnDisk, NotRegularFileError, readRegularFile } from '../../src/workspace/file-io';
import { realpathOfDeepest } from '../../src/workspace/paths';
import { toolHarness } from './harness';

const writers: ChildProcess[] = [];
afterEach(() => {
  for (const w of writers.splice(0)) w.kill();
});

/** A FIFO at `path`, and a writer that opens and closes it after 30 s (a blocked reader's way out). */
function fifo(path: string): void {
  execFileSync('mkfifo', [path]);
  writers.push(spawn('sh', ['-c', 'sleep 30; : > "$0"', path], { stdio: 'ignore' }));
}

describe.runIf(process.platform !== 'win32')('file tools and special files', () => {
  it('view, write, edit, multiedit, apply_patch and grep refuse a FIFO at once, naming it', async () => {
    const h = await toolHarness({ files: { 'a.txt': 'a\n' } });
    try {
      fifo(join(h.app.workspace, 'pipe'));
      const refusal =
        /^path: pipe is a FIFO \(named pipe\), not a regular file; the file tools read and write regular files only$/;
      const started = Date.now();
      await expect(h.call('view', { path: 'pipe' })).rejects.toThrow(refusal);
      await expect(h.call('write', { path: 'pipe', content: 'x' })).rejects.toThrow(refusal);
      await expect(h.call('edit', { path: 'pipe', old_string: '', new_string: 'x' })).rejects.toThrow(
        refusal,
      );
      await expect(h.call('edit', { path: 'pipe', old_string: 'a', new_string: 'b' })).rejects.toThrow(
        refusal,
      );
      await expect(
        h.call('multiedit', { path: 'pipe', edits: [{ old_string: 'a', new_string: 'b' }] }),
      ).rejects.toThrow(refusal);
      const patch = ['*** Begin Patch', '*** Update File: pipe', '@@', '-a', '+b', '*** End Patch'].join(
        '\n',
      );
      await expect(h.call('edit', { mode: 'apply_patch', patch })).rejects.toThrow(
        /^patch: pipe is a FIFO \(named pipe\), not a regular file/,
      );
      await expect(h.call('grep', { pattern: 'a', path: 'pipe' })).rejects.toThrow(
        /^path: pipe is neither a file nor a directory \(a FIFO, socket or device\)/,
      );
      // Well before the writer's 30 s: nothing waited on the pipe (a loaded box takes seconds for these calls).
      expect(Date.now() - started).toBeLessThan(20_000);
      // The other files are as they were.
      expect(await h.call('view', { path: 'a.txt' })).toMatchObject({ content: '     1\ta' });
    } finally {
      await h.app.close();
    }
  });

  it('readRegularFile: a file, its head; a FIFO and a device are NotRegularFileError; a directory EISDIR; fileOnDisk tells them apart', async () => {
    const h = await toolHarness({ files: { 'a.txt': 'hello world' } });
    try {
      const file = join(h.app.workspace, 'a.txt');
      expect(readRegularFile(file).toString()).toBe('hello world');
      expect(readRegularFile(file, 5).toString()).toBe('hello');
      fifo(join(h.app.workspace, 'pipe'));
      expect(() => readRegularFile(join(h.app.workspace, 'pipe'))).toThrow(
        expect.objectContaining({ name: 'NotRegularFileError', kind: 'FIFO (named pipe)' }),
      );
      expect(() => readRegularFile('/dev/null')).toThrow(NotRegularFileError);
      expect(() => readRegularFile('/dev/null')).toThrow(
        '/dev/null is a character device, not a regular file',
      );
      expect(() => readRegularFile(h.app.workspace)).toThrow(expect.objectContaining({ code: 'EISDIR' }));
      // What a change check sees in a file's place: never a read of the FIFO.
      expect(fileOnDisk(file)).toEqual({ kind: 'file', buffer: Buffer.from('hello world') });
      expect(fileOnDisk(join(h.app.workspace, 'pipe'))).toEqual({ kind: 'other', what: 'FIFO (named pipe)' });
      expect(fileOnDisk(h.app.workspace)).toEqual({ kind: 'other', what: 'directory' });
      expect(fileOnDisk(join(h.app.workspace, 'gone'))).toEqual({ kind: 'none' });
      expect(fileOnDisk(join(file, 'under-a-file'))).toEqual({ kind: 'none' });
    } finally {
      await h.app.close();
    }
  });
});

describe('file tools and symlink loops', () => {
  it('a symlink loop is a path that does not resolve, not an overflowed stack', async () => {
    const h = await toolHarness({ files: { 'a.txt': 'a\n' } });
    try {
      symlinkSync('loop2', join(h.app.workspace, 'loop1'));
      symlinkSync('loop1', join(h.app.workspace, 'loop2'));
      expect(realpathOfDeepest(join(h.app.workspace, 'loop1'))).toBe(
        join(realpathSync(h.app.workspace), 'loop1'),
      );
      const refused = h.call('view', { path: 'loop1' });
      await expect(refused).rejects.toThrow(/^path: loop1 /);
      await expect(refused).rejects.not.toThrow(/call stack/);
    } finally {
      await h.app.close();
    }
  });
});
