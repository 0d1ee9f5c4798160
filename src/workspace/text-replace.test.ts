/**
 * The edit cascade, level by level. Pins:
 * - each level (exact, line_endings, trailing_whitespace, indentation, whitespace, block_anchor,
 *   line_numbers) applies when it finds one place, and says so in `match` and `line`;
 * - re-indentation keeps the file's indentation (shift, tabs vs spaces, another width, doc-comment
 *   alignment), and repeated context lines keep the file's own text;
 * - two places at any level is ambiguity: refused with every line, never guessed;
 * - a miss names the closest region, its similarity and text, and what differs;
 * - replace_all stays exact.
 */
import { describe, expect, it } from 'vitest';
import { SvcError } from '../errors';
import { replaceText } from './text-replace';

const edit = (content: string, oldString: string, newString: string, replaceAll = false) =>
  replaceText(content, oldString, newString, { replaceAll, path: 'f.ts' });

function refusal(run: () => unknown): { message: string; details: Record<string, unknown> } {
  try {
    run();
  } catch (error) {
    if (SvcError.is(error)) return { message: error.message, details: error.details ?? {} };
    throw error;
  }
  throw new Error('expected a refusal');
}

const FILE = [
  'class Store {',
  '  /**',
  '   * Save one item.',
  '   */',
  '  save(item) {',
  '    if (!item) return;',
  '    this.items.push(item);',
  '  }',
  '}',
  '',
].join('\n');

describe('replaceText: exact and line endings', () => {
  it('replaces the one exact place and reports its line', () => {
    const result = edit(FILE, 'this.items.push(item);', 'this.items.unshift(item);');
    expect(result).toMatchObject({ match: 'exact', line: 7, replacements: 1 });
    expect(result.content).toContain('    this.items.unshift(item);\n');
  });

  it('refuses an exact old_string found twice, with each line and the lines that tell them apart', () => {
    const content = 'function a() {\n  return 1;\n}\nfunction b() {\n  return 1;\n}\n';
    const { message, details } = refusal(() => edit(content, '  return 1;', '  return 2;'));
    expect(details).toEqual({ path: 'f.ts', reason: 'old_string_ambiguous', lines: [2, 5], match: 'exact' });
    expect(message).toBe(
      'old_string matches 2 places in f.ts (lines 2, 5); include more surrounding lines so it matches exactly one, or set replace_all: true to change every one. The lines above them differ (1 "function a() {", 4 "function b() {"); one of those makes old_string unique',
    );
  });

  it('converts line endings both ways and writes the file’s', () => {
    const crlf = FILE.replace(/\n/g, '\r\n');
    const lf = edit(
      crlf,
      '  save(item) {\n    if (!item) return;',
      '  save(item) {\n    if (!item) throw new Error();',
    );
    expect(lf.match).toBe('line_endings');
    expect(lf.content).toBe(crlf.replace('return;\r\n', 'throw new Error();\r\n'));
    const fromCrlf = edit(FILE, '  }\r\n}', '  }\r\n\r\n  size() {}\r\n}');
    expect(fromCrlf.match).toBe('line_endings');
    expect(fromCrlf.content).toContain('  }\n\n  size() {}\n}\n');
  });

  it('keeps replace_all exact and says so when it misses', () => {
    expect(edit('a = 1\nb = 1\n', '= 1', '= 2', true)).toMatchObject({ replacements: 2, match: 'exact' });
    const { message } = refusal(() => edit(FILE, 'save(item) { ', 'x', true));
    expect(message).toMatch(/With replace_all, old_string must match exactly \(line endings aside\)$/);
  });
});

describe('replaceText: loose levels', () => {
  it('ignores trailing whitespace, drops the slip from the new lines and keeps context from the file', () => {
    const result = edit(
      FILE,
      '  save(item) {  \n    if (!item) return; ',
      '  save(item) {  \n    if (!item) return false; ',
    );
    expect(result).toMatchObject({ match: 'trailing_whitespace', line: 5 });
    expect(result.content).toBe(FILE.replace('return;', 'return false;'));
  });

  it('re-indents a dedented block to the file’s indentation, doc-comment alignment included', () => {
    const result = edit(
      FILE,
      'save(item) {\n  if (!item) return;\n  this.items.push(item);\n}',
      '/**\n * Keep it.\n */\nsave(item) {\n  this.items.push(item);\n}',
    );
    expect(result).toMatchObject({ match: 'indentation', line: 5 });
    expect(result.content).toBe(
      FILE.replace(
        '  save(item) {\n    if (!item) return;\n',
        '  /**\n   * Keep it.\n   */\n  save(item) {\n',
      ),
    );
  });

  it('writes tabs into a tab-indented file when the model sent spaces, and the file’s width', () => {
    const tabs = 'function f() {\n\tif (x) {\n\t\tgo();\n\t}\n}\n';
    const result = edit(tabs, '  if (x) {\n    go();\n  }', '  if (x) {\n    go();\n    stop();\n  }');
    expect(result.match).toBe('indentation');
    expect(result.content).toBe('function f() {\n\tif (x) {\n\t\tgo();\n\t\tstop();\n\t}\n}\n');
    const four = 'if (a) {\n    if (b) {\n        c();\n    }\n}\n';
    const wider = edit(four, 'if (b) {\n  c();\n}', 'if (b) {\n  c();\n} else {\n  d();\n}');
    expect(wider.content).toBe(
      'if (a) {\n    if (b) {\n        c();\n    } else {\n        d();\n    }\n}\n',
    );
  });

  it('ignores spacing inside lines where it does not separate words', () => {
    const result = edit('call(a, b);\nnext( c );\n', 'call(a,b);\nnext(c);', 'call(a, b, c);\nnext(c);');
    expect(result).toMatchObject({ match: 'whitespace', line: 1 });
    expect(result.content).toBe('call(a, b, c);\nnext( c );\n');
  });

  it('takes off view line numbers, from new_string too', () => {
    const result = edit(
      FILE,
      '     6\t    if (!item) return;\n     7\t    this.items.push(item);',
      '     6\t    if (!item) return;\n     7\t    this.items.add(item);',
    );
    expect(result).toMatchObject({ match: 'line_numbers', line: 6 });
    expect(result.content).toBe(FILE.replace('push', 'add'));
  });

  it('matches a block by its first and last lines when one middle line was misremembered', () => {
    const result = edit(
      FILE,
      '  save(item) {\n    if (!item) return;\n    this.item.push(item);\n  }',
      '  save(item) {\n    if (!item) return;\n    this.item.push(item);\n    this.count++;\n  }',
    );
    expect(result).toMatchObject({ match: 'block_anchor', line: 5 });
    // The misremembered context line keeps the file's text.
    expect(result.content).toBe(FILE.replace('push(item);\n', 'push(item);\n    this.count++;\n'));
  });

  it('does not anchor a block whose middle differs in more than a near-identical line', () => {
    const { details } = refusal(() =>
      edit(FILE, '  save(item) {\n    if (!entry) return null;\n    this.list.add(entry);\n  }', 'x'),
    );
    expect(details.reason).toBe('old_string_not_found');
  });

  it('starts at the text when old_string’s first line leaves out the file line’s indentation', () => {
    const result = edit(
      FILE,
      'save(item) { \n    if (!item) return;',
      'store(item) {\n    if (!item) return;',
    );
    expect(result.match).toBe('trailing_whitespace');
    expect(result.content).toBe(FILE.replace('save(item)', 'store(item)'));
  });
});

describe('replaceText: ambiguity and misses', () => {
  it('refuses a loose match found twice and names every place, changing nothing', () => {
    const content = 'if (a) {\n  run();\n}\nif (b) {\n    if (a) {\n      run();\n    }\n}\n';
    const { message, details } = refusal(() =>
      edit(content, 'if (a) {\n run();\n}', 'if (a) {\n run(1);\n}'),
    );
    expect(details).toEqual({
      path: 'f.ts',
      reason: 'old_string_ambiguous',
      lines: [1, 5],
      match: 'indentation',
    });
    expect(message).toMatch(
      /^old_string was not found in f\.ts exactly, and ignoring indentation it matches 2 places \(lines 1, 5\), so nothing was changed\./,
    );
  });

  it('names the closest region, its similarity, the changed token and the text there', () => {
    const { message, details } = refusal(() =>
      edit(FILE, '  save(entry) {\n    if (!item) return;', '  save(entry) {\n    if (!entry) return;'),
    );
    expect(details).toEqual({
      path: 'f.ts',
      reason: 'old_string_not_found',
      closest: { start_line: 5, end_line: 6, similarity: 0.74 },
    });
    expect(message).toBe(
      'old_string was not found in f.ts. Closest: lines 5–6 (similarity 0.74), where line 5 has `item` where old_string has `entry`. The file there reads:\n  save(item) {\n    if (!item) return;\nCopy old_string from that text exactly (whitespace included), or view the file again if it changed',
    );
  });

  it('says when only indentation differs and new_string cannot be re-indented unambiguously', () => {
    const content = 'a {\n  b {\n    c;\n  }\n}\n';
    // The model's lines do not keep the file's relative indentation: no map fits every line.
    const { message } = refusal(() => edit(content, 'b {\n  c;\n    }', 'b {\n  d;\n    }'));
    expect(message).toContain(
      'where the indentation differs: line 3 is indented with 4 spaces but old_string with 2 spaces',
    );
  });

  it('says when nothing in the file is close', () => {
    const { message } = refusal(() => edit(FILE, 'import zlib from "zlib";', 'x'));
    expect(message).toMatch(/^old_string was not found in f\.ts, and no part of the file is close to it/);
  });
});
