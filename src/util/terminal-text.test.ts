import { describe, expect, it } from 'vitest';
import { capText, printable, safeTerminalText, visibleControls } from './terminal-text';

const ESC = '\u001b';

describe('safeTerminalText', () => {
  it('removes what a terminal would act on: OSC 52 and title writes, hyperlinks, line erases, SGR, C1', () => {
    const text = `a${ESC}]52;c;aGFja2Vk\u0007b${ESC}]0;title${ESC}\\c${ESC}]8;;http://x/\u0007link${ESC}]8;;\u0007d${ESC}[2K${ESC}[1Ge${ESC}[8mf${ESC}[0m\u009b2Jg\u009d0;t\u0007h${ESC}(Bi`;
    expect(safeTerminalText(text)).toBe('abclinkdefghi');
  });

  it('keeps newlines and tabs, turns a carriage return into a newline, shows bidi overrides', () => {
    expect(safeTerminalText('one\ttwo\r\nthree\rfour')).toBe('one\ttwo\nthree\nfour');
    expect(safeTerminalText('ls \u202e;touch X #\u202c')).toBe('ls <U+202E>;touch X #<U+202C>');
  });

  it('leaves plain text alone (the same string) and unicode prose intact', () => {
    const plain = 'héllo wörld — 日本語 ✓\n';
    expect(safeTerminalText(plain)).toBe(plain);
  });

  it('a sequence split across streamed chunks is as inert as a whole one', () => {
    const chunks = [`x${ESC}`, ']52;c;aGk=', '\u0007y'];
    const out = chunks.map(safeTerminalText).join('');
    expect(out).not.toMatch(/[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/);
    expect(out.startsWith('x')).toBe(true);
  });
});

describe('visibleControls', () => {
  it('shows every control character, removes none', () => {
    expect(visibleControls(`touch X # ${ESC}[2K${ESC}[1G? allow bash: ls`)).toBe(
      'touch X # ^[[2K^[[1G? allow bash: ls',
    );
    expect(visibleControls('a\rb\u0000c\u007fd\u009be')).toBe('a^Mb^@c^?d<U+009B>e');
    expect(visibleControls('ls \u202e;touch X #\u202c\n\tnext')).toBe(
      'ls <U+202E>;touch X #<U+202C>\n\tnext',
    );
  });
});

describe('capText and printable', () => {
  it('cuts to at most max characters, the ellipsis included, never half a surrogate pair', () => {
    expect(capText('abcdef', 6)).toBe('abcdef');
    expect(capText('abcdefg', 6)).toBe('abcde…');
    expect(capText('abcd😀xyz', 6)).toBe('abcd…');
    expect(capText('abcd😀xyz', 7)).toBe('abcd😀…');
  });

  it('printable cuts first, then shows line breaks, tabs and controls', () => {
    expect(printable('a\nb\tc\x1bd', 20)).toBe('a^Jb^Ic^[d');
    expect(printable('a\nbcdefgh', 4)).toBe('a^Jb…');
  });
});
