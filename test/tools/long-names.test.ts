/**
 * Long file names. A legal 240-byte name failed to write with "internal error: ENAMETOOLONG": the
 * atomic write's temporary file was `.<name>.svc-xxxxxxxx.tmp`, 18 bytes longer than the name. The
 * temporary name no longer grows with the target's, and a name or path really over the limit is
 * refused up front by every file tool, naming the limit.
 */
import { readdirSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { toSvcError } from '../../src/errors';
import { toolHarness } from './harness';

describe('long file names', () => {
  it('write, view and edit a 240-byte name (and a 255-byte one); no temporary file is left', async () => {
    const h = await toolHarness({ files: { 'a.txt': 'a\n' } });
    for (const name of ['n'.repeat(240), 'é'.repeat(127)]) {
      await h.call('write', { path: name, content: 'hello\n' });
      expect(h.read(name)).toBe('hello\n');
      expect(await h.call('view', { path: name })).toMatchObject({ content: '     1\thello' });
      await h.call('edit', { path: name, old_string: 'hello', new_string: 'bye' });
      expect(h.read(name)).toBe('bye\n');
    }
    expect(readdirSync(h.app.workspace).filter((f) => f.endsWith('.tmp'))).toEqual([]);
  });

  it('a name over 255 bytes or a path over the system limit is invalid input naming the limit', async () => {
    const h = await toolHarness({ files: { 'a.txt': 'a\n' } });
    const long = 'n'.repeat(256);
    const name =
      /^path: the name n{40}… is 256 bytes long, over the 255-byte limit for a file or directory name; use a shorter name$/;
    for (const [tool, input] of [
      ['write', { path: long, content: 'x' }],
      ['write', { path: `dir/${long}/x.txt`, content: 'x' }],
      ['view', { path: long }],
      ['edit', { path: long, old_string: '', new_string: 'x' }],
      ['edit', { path: long, old_string: 'a', new_string: 'b' }],
      ['multiedit', { path: long, edits: [{ old_string: 'a', new_string: 'b' }] }],
      ['ls', { path: long }],
      ['grep', { pattern: 'a', path: long }],
    ] as const) {
      await expect(h.call(tool, input), tool).rejects.toMatchObject({
        code: 'invalid_input',
        message: expect.stringMatching(name),
      });
    }
    const deep = `${'d'.repeat(200)}/`.repeat(25);
    await expect(h.call('write', { path: `${deep}x.txt`, content: 'x' })).rejects.toMatchObject({
      code: 'invalid_input',
      message: expect.stringMatching(
        /^path: the path is \d+ bytes long, over the system's \d+-byte limit for a path; use a shorter path$/,
      ),
    });
    // Anywhere else the system says ENAMETOOLONG, it is the input, not an internal error.
    const raw = Object.assign(new Error('ENAMETOOLONG: name too long'), { code: 'ENAMETOOLONG' });
    expect(toSvcError(raw)).toMatchObject({
      code: 'invalid_input',
      message: expect.stringMatching(/over 255 bytes/),
    });
  });
});
