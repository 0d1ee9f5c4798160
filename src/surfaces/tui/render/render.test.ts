import { describe, expect, it } from 'vitest';
import { diffFromDetails, diffStats, renderDiff } from './diff';
import { renderMarkdown } from './markdown';

describe('terminal rendering', () => {
  it('renders markdown without its markup', () => {
    const text = renderMarkdown(
      '# Title\n\nSome **bold** and `code`.\n\n- one\n- two\n\n```js\nlet a = 1;\n```\n',
    );
    expect(text).toContain('Title');
    expect(text).not.toContain('#');
    expect(text).not.toContain('**');
    expect(text).toContain('• one');
    expect(text).toContain('  let a = 1;');
  });

  it('builds a diff from edit details and counts its lines', () => {
    const diff = diffFromDetails({ path: 'a.txt', old_string: 'a\nb\n', new_string: 'a\nc\n' })!;
    expect(diff).toContain('--- a.txt');
    expect(diff).toContain('-b');
    expect(diff).toContain('+c');
    expect(diffStats(diff)).toEqual({ added: 1, removed: 1 });
    expect(diffFromDetails({ diff: '@@ -1 +1 @@\n-x\n+y' })).toBe('@@ -1 +1 @@\n-x\n+y');
    expect(diffFromDetails({ command: 'ls' })).toBeUndefined();
    expect(renderDiff(diff, 2)).toHaveLength(3);
  });
});
