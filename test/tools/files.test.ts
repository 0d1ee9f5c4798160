/**
 * Core file tools through invokeTool with an agent context. Pins:
 * - view: numbered lines, offset/limit with next_offset, long lines cut, images as attachments,
 *   binaries and directories refused, missing files suggest similar names;
 * - write/edit/multiedit: read-before-edit and stale-read refusals, exact-match errors that help,
 *   approval with the diff, deny leaves the file alone, history with diffs, file.changed events,
 *   mutation guards;
 * - paths outside the workspace (and symlink escapes) are refused unless allowed.
 */
import { existsSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { SvcError } from '../../src/errors';
import { attachmentsOf, toModelContent } from '../../src/tools/core/tool-output';
import { tmpWorkspace } from '../helpers/tmp-workspace';
import { toolHarness } from './harness';

const PNG = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==',
  'base64',
);

describe('view', () => {
  it('returns numbered lines, pages with offset/limit and says how to continue', async () => {
    const lines = Array.from({ length: 10 }, (_, i) => `line ${i + 1}`).join('\n');
    const h = await toolHarness({ files: { 'a.txt': `${lines}\n` } });
    const first = await h.call('view', { path: 'a.txt', limit: 3 });
    expect(first).toEqual({
      path: 'a.txt',
      total_lines: 10,
      start_line: 1,
      end_line: 3,
      content: '     1\tline 1\n     2\tline 2\n     3\tline 3',
      truncated: true,
      next_offset: 3,
    });
    expect(h.modelText('view', first)).toContain('call view with offset 3');
    const rest = await h.call('view', { path: 'a.txt', offset: 8 });
    expect(rest).toMatchObject({
      start_line: 9,
      end_line: 10,
      truncated: false,
      content: '     9\tline 9\n    10\tline 10',
    });
    await expect(h.call('view', { path: 'a.txt', offset: 10 })).rejects.toThrow(/offset: 10 is past the end/);
  });

  it('cuts very long lines and reports empty files', async () => {
    const h = await toolHarness({ files: { 'long.txt': `${'x'.repeat(2500)}\n`, 'empty.txt': '' } });
    const long = await h.call('view', { path: 'long.txt' });
    expect(long.content).toContain('… [line cut: 500 more characters]');
    const empty = await h.call('view', { path: 'empty.txt' });
    expect(h.modelText('view', empty)).toBe('empty.txt is empty.');
  });

  it('returns images as attachments the loop can send to the model', async () => {
    const h = await toolHarness();
    writeFileSync(join(h.app.workspace, 'dot.png'), PNG);
    const result = await h.call('view', { path: 'dot.png' });
    expect(result).toMatchObject({ path: 'dot.png', media_type: 'image/png', size_bytes: PNG.length });
    expect(attachmentsOf(result)).toEqual([
      { type: 'image', media_type: 'image/png', data: PNG.toString('base64'), path: 'dot.png' },
    ]);
    const text = h.modelText('view', result);
    expect(text).toBe(`Image dot.png (image/png, ${PNG.length} bytes) is attached.`);
    expect(toModelContent(result, text)).toEqual({
      type: 'content',
      value: [
        { type: 'text', text },
        { type: 'image-data', data: PNG.toString('base64'), mediaType: 'image/png' },
      ],
    });
  });

  it('refuses binaries and directories, and suggests similar names for a missing file', async () => {
    const h = await toolHarness({ files: { 'src/config.ts': 'x\n' } });
    writeFileSync(join(h.app.workspace, 'blob.bin'), Buffer.from([0, 1, 2, 3]));
    await expect(h.call('view', { path: 'blob.bin' })).rejects.toThrow(/binary file/);
    await expect(h.call('view', { path: 'src' })).rejects.toThrow(/is a directory; use ls/);
    await expect(h.call('view', { path: 'src/configs.ts' })).rejects.toMatchObject({
      code: 'not_found',
      message: expect.stringContaining('similar names in that directory: config.ts'),
    });
  });

  it('refuses paths outside the workspace, including through symlinks', async () => {
    const outside = tmpWorkspace({ files: { 'secret.txt': 'top secret\n' } });
    const h = await toolHarness({ files: { 'a.txt': 'a\n' } });
    symlinkSync(outside, join(h.app.workspace, 'escape'));
    symlinkSync(join(outside, 'secret.txt'), join(h.app.workspace, 'link.txt'));
    for (const path of ['../x.txt', join(outside, 'secret.txt'), 'escape/secret.txt', 'link.txt']) {
      await expect(h.call('view', { path }), path).rejects.toMatchObject({
        code: 'forbidden',
        message: expect.stringMatching(/outside the workspace/),
      });
    }
    // Writing through a directory symlink or a dangling link is refused too.
    symlinkSync(join(outside, 'new.txt'), join(h.app.workspace, 'dangling.txt'));
    await expect(h.call('write', { path: 'escape/new.txt', content: 'x' })).rejects.toMatchObject({
      code: 'forbidden',
    });
    await expect(h.call('write', { path: 'dangling.txt', content: 'x' })).rejects.toMatchObject({
      code: 'forbidden',
    });
    expect(h.asks).toEqual([]);
  });

  it('allows outside paths when permissions.allow_outside_workspace is set', async () => {
    const outside = tmpWorkspace({ files: { 'notes.txt': 'hello\n' } });
    const h = await toolHarness({ config: { permissions: { allow_outside_workspace: true } } });
    const result = await h.call('view', { path: join(outside, 'notes.txt') });
    expect(result.content).toBe('     1\thello');
  });
});

describe('write', () => {
  it('creates files and parent directories, asks with the diff, records history and publishes file.changed', async () => {
    const h = await toolHarness();
    const result = await h.call('write', { path: 'src/new/hello.ts', content: 'export const a = 1;\n' });
    expect(result).toMatchObject({ path: 'src/new/hello.ts', change: 'create', additions: 1, deletions: 0 });
    expect(h.read('src/new/hello.ts')).toBe('export const a = 1;\n');
    expect(h.asks).toHaveLength(1);
    expect(h.asks[0]).toMatchObject({
      tool: 'write',
      title: 'write src/new/hello.ts',
      scope: 'src/new/hello.ts',
      details: { paths: ['src/new/hello.ts'], additions: 1, deletions: 0 },
    });
    expect(h.asks[0].details?.diff).toContain('+export const a = 1;');
    const changed = h.busEvents.filter((e) => e.type === 'file.changed');
    expect(changed.map((e) => e.payload)).toEqual([
      {
        session_id: 'ses_test',
        run_id: 'run_test',
        tool: 'write',
        path: 'src/new/hello.ts',
        change: 'create',
      },
    ]);
    const [entry] = await h.app.ws.history.list({ sessionId: 'ses_test' });
    expect(entry).toMatchObject({
      tool: 'write',
      path: 'src/new/hello.ts',
      change: 'create',
      has_content: true,
    });
    expect(await h.app.ws.history.diff(entry.id)).toContain('+export const a = 1;');
  });

  it('refuses to overwrite a file the session has not read, or that changed since it was read', async () => {
    const h = await toolHarness({ files: { 'a.txt': 'one\n' } });
    await expect(h.call('write', { path: 'a.txt', content: 'two\n' })).rejects.toMatchObject({
      code: 'conflict',
      message:
        'a.txt has not been read in this session; view it before you overwrite it, so the change is based on its current content',
    });
    await h.call('view', { path: 'a.txt' });
    writeFileSync(join(h.app.workspace, 'a.txt'), 'changed by someone else\n');
    await expect(h.call('write', { path: 'a.txt', content: 'two\n' })).rejects.toMatchObject({
      code: 'conflict',
      message: expect.stringContaining('a.txt changed on disk since this session last read it'),
    });
    expect(h.read('a.txt')).toBe('changed by someone else\n');
    await h.call('view', { path: 'a.txt' });
    await h.call('write', { path: 'a.txt', content: 'two\n' });
    expect(h.read('a.txt')).toBe('two\n');
    // Its own write counts as a read: a second write needs no new view.
    await h.call('write', { path: 'a.txt', content: 'three\n' });
    expect(h.read('a.txt')).toBe('three\n');
  });

  it('leaves the file alone when permission is denied', async () => {
    const h = await toolHarness();
    h.denyAll();
    await expect(h.call('write', { path: 'x.txt', content: 'x' })).rejects.toMatchObject({
      code: 'forbidden',
    });
    expect(() => h.read('x.txt')).toThrow();
    expect(await h.app.ws.history.list()).toEqual([]);
  });

  it('runs the mutation guards before asking, and refuses when one throws', async () => {
    const h = await toolHarness();
    const seen: unknown[] = [];
    h.app.mutationGuards.push((request) => {
      seen.push(request);
      if (request.paths.includes('locked.txt'))
        throw new SvcError('conflict', 'locked.txt is claimed by ses_other');
    });
    await h.call('write', { path: 'free.txt', content: 'ok' });
    await expect(h.call('write', { path: 'locked.txt', content: 'no' })).rejects.toThrow(
      'claimed by ses_other',
    );
    expect(seen).toContainEqual({ tool: 'write', sessionId: 'ses_test', paths: ['locked.txt'] });
    expect(h.asks.map((a) => a.title)).toEqual(['write free.txt']);
  });

  it('lets the operator write without a session (CLI, HTTP, MCP)', async () => {
    const h = await toolHarness({ files: { 'a.txt': 'one\n' } });
    await h.call('write', { path: 'a.txt', content: 'two\n' }, { sessionId: undefined });
    expect(h.read('a.txt')).toBe('two\n');
  });

  it('TOOL-PROBE-2: refuses a path ending with a slash, writing nothing (it made a file named after the directory)', async () => {
    const h = await toolHarness();
    for (const path of ['notes/', 'deep/er/'])
      await expect(h.call('write', { path, content: 'x\n' })).rejects.toThrow(
        /ends with a slash, which names a directory; give a file path/,
      );
    expect(existsSync(join(h.app.workspace, 'notes'))).toBe(false);
    expect(existsSync(join(h.app.workspace, 'deep'))).toBe(false);
  });
});

describe('edit', () => {
  it('replaces exactly one match and returns the diff', async () => {
    const h = await toolHarness({ files: { 'src/a.ts': 'const a = 1;\nconst b = 2;\n' } });
    await h.call('view', { path: 'src/a.ts' });
    const result = await h.call('edit', {
      path: 'src/a.ts',
      old_string: 'const b = 2;',
      new_string: 'const b = 3;',
    });
    expect(result).toMatchObject({
      path: 'src/a.ts',
      change: 'modify',
      replacements: 1,
      additions: 1,
      deletions: 1,
    });
    expect(h.read('src/a.ts')).toBe('const a = 1;\nconst b = 3;\n');
    expect(h.modelText('edit', result)).toContain('Edited src/a.ts (1 replacement): +1 −1 lines.');
    expect(h.asks[0]).toMatchObject({ tool: 'edit', title: 'edit src/a.ts' });
    expect(h.asks[0].details?.diff).toContain('-const b = 2;\n+const b = 3;');
  });

  it('applies an edit whose indentation or view line numbers slipped, and says how it matched', async () => {
    const h = await toolHarness({ files: { 'a.py': 'class A:\n    def f(self):\n        return 1\n' } });
    await h.call('view', { path: 'a.py' });
    const shifted = await h.call('edit', {
      path: 'a.py',
      old_string: 'def f(self):\n    return 1',
      new_string: 'def f(self):\n    if self.x:\n        return 2\n    return 1',
    });
    expect(shifted).toMatchObject({ change: 'modify', match: 'indentation', line: 2, replacements: 1 });
    expect(h.read('a.py')).toBe(
      'class A:\n    def f(self):\n        if self.x:\n            return 2\n        return 1\n',
    );
    expect(h.modelText('edit', shifted)).toContain(
      'old_string matched at line 2 with indentation ignored; the new lines were re-indented',
    );
    const numbered = await h.call('edit', {
      path: 'a.py',
      old_string: '     1\tclass A:',
      new_string: 'class B:',
    });
    expect(numbered).toMatchObject({ match: 'line_numbers', line: 1 });
    expect(h.read('a.py').split('\n')[0]).toBe('class B:');
  });

  it('names the closest region and what differs when old_string is not found', async () => {
    const h = await toolHarness({ files: { 'a.py': 'def f():\n    total = count + 1\n    return total\n' } });
    await h.call('view', { path: 'a.py' });
    const miss = h.call('edit', {
      path: 'a.py',
      old_string: 'def f():\n    total = amount + 1',
      new_string: 'x',
    });
    await expect(miss).rejects.toMatchObject({
      code: 'invalid_input',
      details: {
        path: 'a.py',
        reason: 'old_string_not_found',
        closest: { start_line: 1, end_line: 2, similarity: expect.any(Number) },
      },
    });
    await expect(miss).rejects.toThrow(
      'old_string was not found in a.py. Closest: lines 1–2 (similarity 0.9), where line 2 has `count` where old_string has `amount`. The file there reads:\ndef f():\n    total = count + 1\nCopy old_string from that text exactly',
    );
    await expect(
      h.call('edit', { path: 'a.py', old_string: 'class Zebra:', new_string: 'x' }),
    ).rejects.toThrow(
      /old_string was not found in a.py, and no part of the file is close to it.*view the file again/,
    );
    expect(h.read('a.py')).toBe('def f():\n    total = count + 1\n    return total\n');
  });

  it('refuses an ambiguous old_string with the lines it matches, and replaces all on request', async () => {
    const h = await toolHarness({ files: { 'a.txt': 'x = 1\ny = 2\nx = 1\n' } });
    await h.call('view', { path: 'a.txt' });
    await expect(h.call('edit', { path: 'a.txt', old_string: 'x = 1', new_string: 'x = 9' })).rejects.toThrow(
      'old_string matches 2 places in a.txt (lines 1, 3); include more surrounding lines so it matches exactly one, or set replace_all: true to change every one',
    );
    const result = await h.call('edit', {
      path: 'a.txt',
      old_string: 'x = 1',
      new_string: 'x = 9',
      replace_all: true,
    });
    expect(result.replacements).toBe(2);
    expect(h.read('a.txt')).toBe('x = 9\ny = 2\nx = 9\n');
  });

  it('keeps CRLF line endings when the edit is written with LF', async () => {
    const h = await toolHarness({ files: { 'w.txt': 'a\r\nb\r\nc\r\n' } });
    await h.call('view', { path: 'w.txt' });
    await h.call('edit', { path: 'w.txt', old_string: 'a\nb', new_string: 'A\nB' });
    expect(h.read('w.txt')).toBe('A\r\nB\r\nc\r\n');
  });

  it('creates a new file with an empty old_string, but not over an existing one', async () => {
    const h = await toolHarness({ files: { 'old.txt': 'x\n' } });
    await h.call('edit', { path: 'fresh.txt', old_string: '', new_string: 'hello\n' });
    expect(h.read('fresh.txt')).toBe('hello\n');
    await expect(h.call('edit', { path: 'old.txt', old_string: '', new_string: 'y' })).rejects.toThrow(
      /already exists and is not empty/,
    );
  });

  it('refuses a stale edit and edits of files never read', async () => {
    const h = await toolHarness({ files: { 'a.txt': 'one\n' } });
    await expect(
      h.call('edit', { path: 'a.txt', old_string: 'one', new_string: 'two' }),
    ).rejects.toMatchObject({
      code: 'conflict',
      details: { reason: 'not_read' },
    });
    await h.call('view', { path: 'a.txt' });
    writeFileSync(join(h.app.workspace, 'a.txt'), 'one\nand more\n');
    await expect(
      h.call('edit', { path: 'a.txt', old_string: 'one', new_string: 'two' }),
    ).rejects.toMatchObject({
      code: 'conflict',
      details: { reason: 'stale_read' },
    });
    // Another session's read does not count for this one.
    await h.call('view', { path: 'a.txt' }, { sessionId: 'ses_other' });
    await expect(
      h.call('edit', { path: 'a.txt', old_string: 'one', new_string: 'two' }),
    ).rejects.toMatchObject({
      details: { reason: 'stale_read' },
    });
  });

  it('refuses when the file changes while the approval is pending', async () => {
    const h = await toolHarness({ files: { 'a.txt': 'one\n' } });
    await h.call('view', { path: 'a.txt' });
    const file = join(h.app.workspace, 'a.txt');
    await expect(
      h.call(
        'edit',
        { path: 'a.txt', old_string: 'one', new_string: 'two' },
        {
          ask: async () => {
            writeFileSync(file, 'edited meanwhile\n');
          },
        },
      ),
    ).rejects.toThrow(/changed on disk while the change was waiting for approval/);
    expect(readFileSync(file, 'utf8')).toBe('edited meanwhile\n');
  });
});

describe('parallel edits', () => {
  it('runs edits of one file one after the other, so parallel tool calls all land', async () => {
    const h = await toolHarness({ files: { 'a.txt': 'one\ntwo\nthree\n' } });
    await h.call('view', { path: 'a.txt' });
    await Promise.all([
      h.call('edit', { path: 'a.txt', old_string: 'one', new_string: 'ONE' }),
      h.call('edit', { path: 'a.txt', old_string: 'two', new_string: 'TWO' }),
      h.call('edit', { path: 'a.txt', old_string: 'three', new_string: 'THREE' }),
    ]);
    expect(h.read('a.txt')).toBe('ONE\nTWO\nTHREE\n');
  });
});

describe('multiedit', () => {
  it('applies edits in order, atomically', async () => {
    const h = await toolHarness({ files: { 'a.ts': 'let a = 1;\nlet b = 2;\nlet c = 3;\n' } });
    await h.call('view', { path: 'a.ts' });
    const result = await h.call('multiedit', {
      path: 'a.ts',
      edits: [
        { old_string: 'let a = 1;', new_string: 'let a = 10;' },
        { old_string: 'let a = 10;\nlet b', new_string: 'let a = 10;\nconst b' },
        { old_string: 'let', new_string: 'var', replace_all: true },
      ],
    });
    expect(result).toMatchObject({ change: 'modify', replacements: 4 });
    expect(h.read('a.ts')).toBe('var a = 10;\nconst b = 2;\nvar c = 3;\n');
    expect(h.asks).toHaveLength(1);
    expect(h.asks[0].title).toBe('multiedit a.ts (3 edits)');
  });

  it('changes nothing when one edit fails, and names it', async () => {
    const h = await toolHarness({ files: { 'a.ts': 'one\ntwo\n' } });
    await h.call('view', { path: 'a.ts' });
    await expect(
      h.call('multiedit', {
        path: 'a.ts',
        edits: [
          { old_string: 'one', new_string: 'ONE' },
          { old_string: 'three', new_string: 'THREE' },
        ],
      }),
    ).rejects.toThrow(
      /^edits\[1\]: old_string was not found in a\.ts.*\(after applying edits\[0\]–edits\[0\]\); no edit was applied$/s,
    );
    expect(h.read('a.ts')).toBe('one\ntwo\n');
    expect(h.asks).toEqual([]);
  });
});

describe('ls, glob, grep', () => {
  const files = {
    '.gitignore': 'node_modules/\n*.log\n',
    'src/index.ts': 'export function main() {\n  return "hello";\n}\n',
    'src/util/strings.ts': 'export const HELLO = "hello";\n',
    'src/util/deep/more/x.ts': 'x\n',
    'node_modules/pkg/index.js': 'hello from a dependency\n',
    'debug.log': 'hello in a log\n',
    '.github/workflows/ci.yml': 'name: hello\n',
    'README.md': '# Hello\n',
  };

  it('ls prints a tree honoring .gitignore, with hidden files and depth summaries', async () => {
    const h = await toolHarness({ files });
    await h.call('bash', { command: 'true' }); // the data dir (.svc) exists and must not be listed
    const result = await h.call('ls', { depth: 2 });
    expect(result.tree).toBe(
      [
        `${h.app.workspace}/`,
        '  .github/',
        '    workflows/ (1 file)',
        '  src/',
        '    util/ (2 files)',
        '    index.ts',
        '  .gitignore',
        '  README.md',
      ].join('\n'),
    );
    expect(result).toMatchObject({ files: 3, directories: 4, truncated: false });
    const sub = await h.call('ls', { path: 'src/util' });
    expect(sub.tree).toBe(['src/util/', '  deep/', '    more/', '      x.ts', '  strings.ts'].join('\n'));
    const capped = await h.call('ls', { limit: 2 });
    expect(capped.truncated).toBe(true);
  });

  it('glob finds files by pattern, newest first', async () => {
    const h = await toolHarness({ files });
    const { utimesSync } = await import('node:fs');
    utimesSync(join(h.app.workspace, 'src/index.ts'), new Date(2020, 1, 1), new Date(2020, 1, 1));
    const result = await h.call('glob', { pattern: '*.ts' });
    expect(result.files).toEqual(['src/util/deep/more/x.ts', 'src/util/strings.ts', 'src/index.ts']);
    expect((await h.call('glob', { pattern: 'src/util/*.ts' })).files).toEqual(['src/util/strings.ts']);
    expect((await h.call('glob', { pattern: './src/util/*.ts' })).files).toEqual(['src/util/strings.ts']);
    expect((await h.call('glob', { pattern: `${h.app.workspace}/src/util/*.ts` })).files).toEqual([
      'src/util/strings.ts',
    ]);
    expect((await h.call('glob', { pattern: '*.ts', path: 'src/util', limit: 1 })).truncated).toBe(true);
    expect(h.modelText('glob', await h.call('glob', { pattern: '*.rs' }))).toBe(
      'No files match *.rs under ..',
    );
  });

  it('grep searches contents with ripgrep, honoring .gitignore, in three output modes', async () => {
    const h = await toolHarness({ files });
    const content = await h.call('grep', { pattern: 'hello', case_insensitive: true });
    expect(content.matches).toEqual([
      { path: '.github/workflows/ci.yml', line: 1, text: 'name: hello' },
      { path: 'README.md', line: 1, text: '# Hello' },
      { path: 'src/index.ts', line: 2, text: '  return "hello";' },
      { path: 'src/util/strings.ts', line: 1, text: 'export const HELLO = "hello";' },
    ]);
    expect(content.total).toBe(4);
    expect(h.modelText('grep', content)).toContain('src/index.ts:\n  2:   return "hello";');
    const filesOnly = await h.call('grep', { pattern: 'hello', output_mode: 'files', glob: '*.ts' });
    expect(filesOnly.files).toEqual(['src/index.ts', 'src/util/strings.ts']);
    const counts = await h.call('grep', { pattern: 'hello', output_mode: 'count', path: 'src' });
    expect(counts.counts).toEqual([
      { path: 'src/index.ts', count: 1 },
      { path: 'src/util/strings.ts', count: 1 },
    ]);
    const withContext = await h.call('grep', { pattern: 'return', context: 1, path: 'src/index.ts' });
    expect(withContext.matches).toEqual([
      { path: 'src/index.ts', line: 1, text: 'export function main() {', context: true },
      { path: 'src/index.ts', line: 2, text: '  return "hello";' },
      { path: 'src/index.ts', line: 3, text: '}', context: true },
    ]);
    const literal = await h.call('grep', { pattern: 'main()', literal: true });
    expect(literal.matches).toHaveLength(1);
    const limited = await h.call('grep', { pattern: 'hello', case_insensitive: true, limit: 2 });
    expect(limited).toMatchObject({ total: 4, truncated: true });
    expect(limited.matches).toHaveLength(2);
  });

  it('grep reports a bad regex clearly and an empty search plainly', async () => {
    const h = await toolHarness({ files });
    await expect(h.call('grep', { pattern: 'foo(' })).rejects.toMatchObject({
      code: 'invalid_input',
      message: expect.stringMatching(/^pattern: regex parse error/),
    });
    const none = await h.call('grep', { pattern: 'nothing-matches-this' });
    expect(h.modelText('grep', none)).toBe('No matches for nothing-matches-this under ..');
    await expect(h.call('grep', { pattern: 'x', path: 'missing' })).rejects.toMatchObject({
      code: 'not_found',
    });
  });

  it('does not search svc data in the workspace', async () => {
    const h = await toolHarness({ files });
    mkdirSync(join(h.app.dataDir, 'logs'), { recursive: true });
    writeFileSync(join(h.app.dataDir, 'logs', 'svc.txt'), 'hello from svc\n');
    const result = await h.call('grep', { pattern: 'hello from svc' });
    expect(result.total).toBe(0);
  });
});

describe('hard workspace claims', () => {
  it("refuses writes, edits and shell redirects into another session's hard claim", async () => {
    const h = await toolHarness({ files: { 'src/a.ts': 'a\n', 'other/b.ts': 'b\n' } });
    const holder = (await h.app.sessions.create({ title: 'holder' })).id;
    await h.call(
      'workspace_claim',
      { action: 'acquire', paths: ['src/'], mode: 'hard' },
      { sessionId: holder },
    );
    await expect(h.call('write', { path: 'src/new.ts', content: 'x' })).rejects.toMatchObject({
      code: 'conflict',
      message: expect.stringContaining('is under hard workspace claim'),
    });
    await expect(h.call('bash', { command: 'echo x > src/a.ts' })).rejects.toThrow(/hard workspace claim/);
    expect(h.read('src/a.ts')).toBe('a\n');
    await h.call('write', { path: 'other/c.ts', content: 'fine\n' });
    // The holder itself is not blocked.
    await h.call('write', { path: 'src/new.ts', content: 'mine\n' }, { sessionId: holder });
    expect(h.asks.map((a) => a.title)).toEqual(['write other/c.ts', 'write src/new.ts']);
  });
});
