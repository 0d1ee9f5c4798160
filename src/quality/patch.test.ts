/**
 * Patch parsing and hunk application. Pins: both formats parse into the same model; hunks are
 * found exactly, then with whitespace and punctuation fuzz, keeping the file's own context text;
 * Codex @@ context lines and unified line numbers place ambiguous hunks; a hunk that does not
 * apply names the file, the hunk and the closest near-miss.
 */
import { describe, expect, it } from 'vitest';
import { SvcError } from '../errors';
import { lineCounts } from './line-diff';
import { applyHunks } from './patch-apply';
import { detectFormat, parsePatch } from './patch-parse';

const codex = (body: string) => `*** Begin Patch\n${body}\n*** End Patch`;

function failure(fn: () => unknown): SvcError {
  try {
    fn();
  } catch (error) {
    if (SvcError.is(error)) return error;
    throw error;
  }
  throw new Error('expected an SvcError');
}

describe('parsePatch', () => {
  it('reads every Codex section kind', () => {
    const parsed = parsePatch(
      codex(
        [
          '*** Add File: docs/new.md',
          '+# New',
          '+',
          '+text',
          '*** Update File: src/a.py',
          '*** Move to: src/b.py',
          '@@ def greet():',
          '-    print("Hi")',
          '+    print("Hello")',
          '*** End of File',
          '*** Delete File: old.txt',
        ].join('\n'),
      ),
    );
    expect(parsed).toEqual({
      format: 'codex',
      files: [
        { kind: 'add', path: 'docs/new.md', content: '# New\n\ntext\n', line: 2 },
        {
          kind: 'update',
          path: 'src/a.py',
          moveTo: 'src/b.py',
          line: 6,
          hunks: [
            {
              index: 1,
              header: '@@ def greet():',
              context: 'def greet():',
              endOfFile: true,
              lines: [
                { op: '-', text: '    print("Hi")' },
                { op: '+', text: '    print("Hello")' },
              ],
            },
          ],
        },
        { kind: 'delete', path: 'old.txt', line: 12 },
      ],
    });
  });

  it('strips a heredoc wrapper and CRLF, and lets the first hunk omit @@', () => {
    const text =
      "apply_patch <<'EOF'\r\n*** Begin Patch\r\n*** Update File: a.txt\r\n-one\r\n+uno\r\n*** End Patch\r\nEOF\r\n";
    expect(parsePatch(text).files).toEqual([
      {
        kind: 'update',
        path: 'a.txt',
        line: 2,
        hunks: [
          {
            index: 1,
            header: '@@',
            endOfFile: false,
            lines: [
              { op: '-', text: 'one' },
              { op: '+', text: 'uno' },
            ],
          },
        ],
      },
    ]);
  });

  it('reads unified diffs with git headers, renames, /dev/null and no-newline markers', () => {
    const parsed = parsePatch(
      [
        'diff --git a/src/x.ts b/src/x.ts',
        'index 1111111..2222222 100644',
        '--- a/src/x.ts',
        '+++ b/src/x.ts',
        '@@ -1,3 +1,3 @@',
        ' a',
        '-b',
        '+B',
        ' c',
        'diff --git a/new.txt b/new.txt',
        'new file mode 100644',
        '--- /dev/null',
        '+++ b/new.txt',
        '@@ -0,0 +1,2 @@',
        '+hello',
        '+world',
        '\\ No newline at end of file',
        'diff --git a/gone.txt b/gone.txt',
        'deleted file mode 100644',
        '--- a/gone.txt',
        '+++ /dev/null',
        '@@ -1 +0,0 @@',
        '-bye',
        'diff --git a/old/name.ts b/new/name.ts',
        'similarity index 100%',
        'rename from old/name.ts',
        'rename to new/name.ts',
      ].join('\n'),
    );
    expect(parsed.format).toBe('unified');
    expect(parsed.files.map((f) => [f.kind, f.path, 'moveTo' in f ? f.moveTo : undefined])).toEqual([
      ['update', 'src/x.ts', undefined],
      ['add', 'new.txt', undefined],
      ['delete', 'gone.txt', undefined],
      ['update', 'old/name.ts', 'new/name.ts'],
    ]);
    expect(parsed.files[1]).toMatchObject({ content: 'hello\nworld' });
  });

  it('tolerates a miscounted unified hunk header', () => {
    const parsed = parsePatch(
      ['--- a/f', '+++ b/f', '@@ -1,1 +1,1 @@', ' keep', '-old', '+new', '+more'].join('\n'),
    );
    expect(parsed.files[0]).toMatchObject({
      hunks: [{ lines: [{ op: ' ' }, { op: '-' }, { op: '+' }, { op: '+' }] }],
    });
  });

  it('names the line and what was expected when the patch is malformed', () => {
    expect(failure(() => parsePatch('hello')).message).toMatch(
      /^patch: not a patch this tool reads; give a Codex patch/,
    );
    expect(failure(() => parsePatch('*** Begin Patch\n*** Update File: a\n-x\n')).message).toBe(
      'patch line 3: no "*** End Patch" line; the patch may be cut off. End it with "*** End Patch"',
    );
    expect(failure(() => parsePatch(codex('*** Add File: a\nno plus'))).message).toBe(
      'patch line 3: in Add File a, every line of the new file starts with "+" (found "no plus")',
    );
    expect(failure(() => parsePatch(codex('*** Frobnicate: a'))).message).toMatch(
      /^patch line 2: "\*\*\* Frobnicate: a" is not a file section header/,
    );
    expect(failure(() => parsePatch('@@ -1 +1 @@\n-a\n+b')).message).toMatch(/a hunk without file headers/);
    expect(parsePatch('@@ -1 +1 @@\n-a\n+b', 'f.txt').files[0]).toMatchObject({
      kind: 'update',
      path: 'f.txt',
    });
  });

  it('detects the format', () => {
    expect(detectFormat(codex('*** Delete File: a'))).toBe('codex');
    expect(detectFormat('--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b')).toBe('unified');
    expect(detectFormat('just text')).toBeUndefined();
  });
});

describe('applyHunks', () => {
  const hunk = (lines: string[], extra: Record<string, unknown> = {}) => ({
    index: 1,
    header: '@@',
    endOfFile: false,
    lines: lines.map((l) => ({ op: l[0] as ' ' | '-' | '+', text: l.slice(1) })),
    ...extra,
  });

  it('replaces exactly and keeps CRLF line endings', () => {
    const out = applyHunks('f', 'a\r\nb\r\nc\r\n', [hunk([' a', '-b', '+B', ' c'])], 'unified');
    expect(out.text).toBe('a\r\nB\r\nc\r\n');
    expect(out.hunks).toEqual([{ index: 1, header: '@@', line: 1, fuzz: 'exact' }]);
  });

  it('matches loosely but keeps the file’s own context lines', () => {
    const file = 'function f() {\n    const s = “x”;\n    return s;   \n}\n';
    const out = applyHunks(
      'f.js',
      file,
      [hunk([' const s = "x";', '-return s;', '+return s + s;'])],
      'codex',
    );
    expect(out.text).toBe('function f() {\n    const s = “x”;\nreturn s + s;\n}\n');
    expect(out.hunks[0].fuzz).toBe('punctuation');
  });

  it('uses the Codex @@ context line and the unified line number to pick among repeats', () => {
    const file = 'def a():\n    x = 1\ndef b():\n    x = 1\n';
    expect(
      applyHunks('p.py', file, [hunk(['-    x = 1', '+    x = 2'], { context: 'def b():' })], 'codex').text,
    ).toBe('def a():\n    x = 1\ndef b():\n    x = 2\n');
    expect(
      applyHunks('p.py', file, [hunk(['-    x = 1', '+    x = 3'], { oldStart: 4 })], 'unified').text,
    ).toBe('def a():\n    x = 1\ndef b():\n    x = 3\n');
  });

  it('appends a Codex pure addition at the end and inserts a unified one at its line', () => {
    expect(applyHunks('f', 'a\nb\n', [hunk(['+c'])], 'codex').text).toBe('a\nb\nc\n');
    expect(applyHunks('f', 'a\nb\n', [hunk(['+z'], { oldStart: 0 })], 'unified').text).toBe('z\na\nb\n');
  });

  it('refuses a hunk that does not apply, naming the file, the hunk and the closest lines', () => {
    const error = failure(() =>
      applyHunks(
        'src/a.ts',
        'one\ntwo\nthree\nfour\n',
        [hunk([' one', '-TWO', '+2', ' three'], { header: '@@ x' })],
        'codex',
      ),
    );
    expect(error.code).toBe('invalid_input');
    expect(error.message).toBe(
      'patch: src/a.ts, hunk 1 of 1 (@@ x) did not apply: its 3 context and removed lines were not found in src/a.ts. Closest: lines 1–3 (2 of 3 lines match), where line 2 is "two" but the hunk expects "TWO". Nothing was written; view the file and redo the patch against its current content',
    );
    expect(error.details).toEqual({ path: 'src/a.ts', hunk: 1, header: '@@ x', reason: 'context_not_found' });
  });

  it('refuses hunks out of file order', () => {
    const error = failure(() =>
      applyHunks('f', 'a\nb\nc\nd\n', [hunk(['-c', '+C']), { ...hunk(['-a', '+A']), index: 2 }], 'codex'),
    );
    expect(error.details).toMatchObject({ hunk: 2, reason: 'out_of_order' });
  });
});

describe('lineCounts', () => {
  it('counts added and removed lines like a diff does', () => {
    expect(lineCounts('a\nb\nc\n', 'a\nB\nc\nd\n')).toEqual({ additions: 2, deletions: 1 });
    expect(lineCounts('', 'x\ny\n')).toEqual({ additions: 2, deletions: 0 });
    expect(lineCounts('x\n', '')).toEqual({ additions: 0, deletions: 1 });
    expect(lineCounts('a\nb\nc\nd\ne\n', 'a\nc\nx\ne\n')).toEqual({ additions: 1, deletions: 2 });
  });
});
