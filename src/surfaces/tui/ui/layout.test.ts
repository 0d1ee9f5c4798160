import { describe, expect, it } from 'vitest';
import { diffWindow } from '../render/diff-window';
import { formatElapsed, statusLayout } from './status-line';
import { columnLines, wrapLines, wrapText } from './wrap-lines';

const strip = (s: string) => s.replace(/\x1b\[[0-9;]*m/g, '');

describe('statusLayout', () => {
  const right = 'anthropic/claude-sonnet-4-5 · ctx 12% · 1.2k↑ 300↓ · $0.0123';
  const short = 'fake/m1 · 0↑ 0↓ · $0.0000';
  it('shortens the path with a middle ellipsis and keeps two spaces before the right side', () => {
    const layout = statusLayout({
      width: 80,
      label: '○ idle',
      title: 'fix the tests',
      target: '/home/someone/projects/a-rather-long-project-directory/my-service',
      right: short,
    });
    const line = `○ idle ${layout.title}  ${layout.target}${' '.repeat(layout.gap)}${layout.right}`;
    expect(line.length).toBe(80);
    expect(layout.target).toMatch(/^\/home.*….*my-service$/);
    expect(layout.gap).toBeGreaterThanOrEqual(2);
    expect(layout.right).toBe(short);
  });

  it('drops the path, then shortens the title, then the right side, as the width shrinks', () => {
    const at = (width: number) =>
      statusLayout({
        width,
        label: '● running 3s',
        title: 'a long session title here',
        target: '/work/x',
        right,
      });
    expect(at(120).target).toBe('/work/x');
    expect(at(100).target).toBe('');
    expect(at(100).title).toBe('a long session title here');
    expect(at(80).title.endsWith('…')).toBe(true);
    const narrow = at(40);
    expect(narrow.right.endsWith('…')).toBe(true);
    expect(
      '● running 3s'.length + 1 + narrow.title.length + narrow.gap + narrow.right.length,
    ).toBeLessThanOrEqual(40);
  });

  it('formats the elapsed time', () => {
    expect([formatElapsed(0), formatElapsed(9_900), formatElapsed(65_000), formatElapsed(3_720_000)]).toEqual(
      ['0s', '9s', '1m05s', '1h02m'],
    );
  });
});

describe('wrapping', () => {
  it('wraps words, splits a word longer than the width, and indents continuations', () => {
    expect(wrapText('one two three four', 9)).toEqual(['one two', 'three', 'four']);
    expect(wrapText('abcdefghij', 4)).toEqual(['abcd', 'efgh', 'ij']);
    expect(wrapLines(['  key: a value that is long'], 14)).toEqual([
      '  key: a value',
      '    that is',
      '    long',
    ]);
  });

  it('puts descriptions in their own column and wraps them there', () => {
    const lines = columnLines(
      [
        ['/undo', 'restore a checkpoint (one is taken before each prompt)'],
        ['/a-very-long-command-name <with> <arguments>', 'short'],
      ],
      40,
    );
    for (const line of lines) expect(line.length).toBeLessThanOrEqual(40);
    expect(lines.join(' ').replace(/\s+/g, ' ')).toContain(
      'restore a checkpoint (one is taken before each prompt)',
    );
    expect(lines[0].startsWith('  /undo')).toBe(true);
  });
});

describe('diffWindow', () => {
  const diff = [
    '--- a.txt',
    '+++ a.txt',
    '@@ -1,1 +1,1 @@',
    '-hello world',
    '\\ No newline at end of file',
    '+goodbye world',
    '\\ No newline at end of file',
  ].join('\n');

  it('shows the changed lines first when rows are short', () => {
    expect(diffWindow(diff, 2).lines.map(strip)).toEqual(['-hello world', '+goodbye world']);
    expect(diffWindow(diff, 3).lines.map(strip)).toEqual([
      '@@ -1,1 +1,1 @@',
      '-hello world',
      '+goodbye world',
    ]);
    expect(diffWindow(diff, 10).lines.map(strip)).toEqual([
      '@@ -1,1 +1,1 @@',
      '-hello world',
      '\\ No newline at end of file',
      '+goodbye world',
      '\\ No newline at end of file',
    ]);
  });

  it('scrolls a long diff from its first change, with a position line', () => {
    const long = ['--- f', '+++ f', '@@ -1,9 +1,9 @@', ' a', ' b', '-c', '+C', ' d', ' e', '-f', '+F'].join(
      '\n',
    );
    const first = diffWindow(long, 3);
    expect(first.lines.map(strip)).toEqual(['-c', '+C', 'lines 3–4 of 8 · pgup pgdn']);
    expect(first.scrolls).toBe(true);
    const next = diffWindow(long, 3, 4);
    expect(next.lines.map(strip)).toEqual(['-f', '+F', 'lines 7–8 of 8 · pgup pgdn']);
    expect(diffWindow(long, 3, 100).offset).toBe(4);
  });
});
