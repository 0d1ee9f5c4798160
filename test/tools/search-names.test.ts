/**
 * A file name may hold a newline. ripgrep's paths were read line by line: glob `*` answered
 * `"line.txt", "new"` for `new\nline.txt`, grep put its match under `line.txt`, ls counted two
 * files. Paths now come NUL-separated (`--null`) and are read whole.
 */
import { describe, expect, it } from 'vitest';
import { toolHarness } from './harness';

describe.runIf(process.platform !== 'win32')('file names with a newline', () => {
  it('glob, grep (every mode), ls and search name new\\nline.txt whole', async () => {
    const h = await toolHarness({
      files: { 'new\nline.txt': 'hit one\nmiss\n', 'd\nir/x.txt': 'hit two\n', 'a.txt': 'miss\n' },
    });
    const names = ['a.txt', 'd\nir/x.txt', 'new\nline.txt'];
    expect((await h.call('glob', { pattern: '*' })).files.sort()).toEqual(names);
    expect((await h.call('glob', { pattern: 'new*' })).files).toEqual(['new\nline.txt']);
    const content = await h.call('grep', { pattern: 'hit', context: 1 });
    expect(content.matches).toEqual([
      { path: 'd\nir/x.txt', line: 1, text: 'hit two' },
      { path: 'new\nline.txt', line: 1, text: 'hit one' },
      { path: 'new\nline.txt', line: 2, text: 'miss', context: true },
    ]);
    expect(content.total).toBe(2);
    expect((await h.call('grep', { pattern: 'hit', output_mode: 'files' })).files).toEqual([
      'd\nir/x.txt',
      'new\nline.txt',
    ]);
    expect((await h.call('grep', { pattern: 'i', output_mode: 'count' })).counts).toEqual([
      { path: 'a.txt', count: 1 },
      { path: 'd\nir/x.txt', count: 1 },
      { path: 'new\nline.txt', count: 2 },
    ]);
    expect((await h.call('grep', { pattern: 'hit', path: 'new\nline.txt' })).matches).toEqual([
      { path: 'new\nline.txt', line: 1, text: 'hit one' },
    ]);
    expect((await h.call('search', { mode: 'text', pattern: 'two' })).matches).toEqual([
      { path: 'd\nir/x.txt', line: 1, text: 'hit two' },
    ]);
    const ls = await h.call('ls', {});
    expect(ls).toMatchObject({ files: 3, directories: 1 });
    // The tree shows such a name quoted, on one line.
    expect(ls.tree.split('\n').slice(1)).toEqual([
      '  "d\\nir"/',
      '    x.txt',
      '  a.txt',
      '  "new\\nline.txt"',
    ]);
  });
});
