/**
 * input-filter.ts copies what Ink's key parser names (ink/build/parse-keypress.js `keyName`,
 * `fnKeyRe`, the kitty keys) and relies on how Ink's input parser splits stdin into events
 * (ink/build/input-parser.js). These tests hold the copy to the Ink installed: an Ink upgrade that
 * names another key, names one no more, reads a sequence otherwise, or splits input otherwise
 * fails here, not in a terminal.
 */
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import { isKey, PASTE_END, PASTE_START } from './input-filter';

interface InkKeypress {
  name?: string;
  ctrl: boolean;
  isKittyProtocol?: boolean;
}

// Ink's package exports only its entry: its own modules are read from the files beside it.
const inkBuild = dirname(createRequire(import.meta.url).resolve('ink'));
const inkModule = async <T>(file: string): Promise<T> =>
  (await import(pathToFileURL(join(inkBuild, file)).href)) as T;

/** Escape sequences of every shape Ink's parsers read: CSI, SS3, the `ESC [[` keys, kitty, with ESC ESC too. */
function sequences(): string[] {
  const finals = Array.from({ length: 0x7f - 0x40 }, (_, i) => String.fromCharCode(0x40 + i));
  const params = ['', ...Array.from({ length: 31 }, (_, i) => `${i}`), '1;2', '1;5', '3;5', '5;2', '13;5'];
  params.push('99', '200', '201', '12;40', '?62;22', '>1;2', '1;1:1', '3;1:3', '13;5:1', '99;5:1', '57358');
  params.push('2;5:2', '15;1:1', '55296', '1;5:1');
  const out: string[] = [];
  for (const prefix of ['\x1b[', '\x1b\x1b[', '\x1b[[']) {
    for (const param of params)
      for (const final of [...finals, '$', '^']) out.push(`${prefix}${param}${final}`);
  }
  for (const prefix of ['\x1bO', '\x1b\x1bO', '\x1bN']) for (const final of finals) out.push(prefix + final);
  return out;
}

describe("the input filter's copy of Ink's key table (Ink as installed)", () => {
  it('names a key for an escape sequence exactly when Ink does', async () => {
    const { default: parseKeypress } = await inkModule<{ default: (s: string) => InkKeypress }>(
      'parse-keypress.js',
    );
    const differ: string[] = [];
    for (const sequence of sequences()) {
      const key = parseKeypress(sequence);
      const named = Boolean(key.name) || key.isKittyProtocol === true;
      if (isKey(sequence) !== named) differ.push(`${JSON.stringify(sequence)} ink:${key.name ?? 'none'}`);
    }
    expect(differ).toEqual([]);
  });

  it("ESC and one character (alt with a key): Ink reads no ctrl in any, so useInput's input is the character", async () => {
    const { default: parseKeypress } = await inkModule<{ default: (s: string) => InkKeypress }>(
      'parse-keypress.js',
    );
    const chars = Array.from({ length: 0x100 }, (_, i) => String.fromCharCode(i)).concat(['é', '中']);
    const taken = chars.map((c) => `\x1b${c}`).filter(isKey);
    expect(taken.length).toBeGreaterThan(90);
    const ctrl = taken.filter((s) => parseKeypress(s).ctrl && !parseKeypress(s).name);
    expect(ctrl.map((s) => JSON.stringify(s))).toEqual([]);
  });

  it("gets the events it relies on from Ink's input parser: paste markers, terminal strings, ST", async () => {
    const { createInputParser } = await inkModule<{
      createInputParser: () => { push(chunk: string): string[] };
    }>('input-parser.js');
    const parser = createInputParser();
    expect(parser.push(`${PASTE_START}a\rb${PASTE_END}c`)).toEqual([PASTE_START, 'a\rb', PASTE_END, 'c']);
    expect(parser.push('x\x1b]0;title\x07y')).toEqual(['x', '\x1b]', '0;title\x07y']);
    expect(parser.push('\x1b]8;;http://e\x1b\\z')).toEqual(['\x1b]', '8;;http://e', '\x1b\\', 'z']);
    expect(parser.push('\x1b[31m\x1b[A')).toEqual(['\x1b[31m', '\x1b[A']);
    // DCS, APC, PM, SOS as OSC: the opening as alt+letter, the text, ST.
    for (const open of ['\x1bP', '\x1b_', '\x1b^', '\x1bX'])
      expect(parser.push(`${open}1$r0m\x1b\\z`)).toEqual([open, '1$r0m', '\x1b\\', 'z']);
    // The C1 forms are text to Ink.
    expect(parser.push('a\x9d0;t\x07\x90p\x9cb')).toEqual(['a\x9d0;t\x07\x90p\x9cb']);
  });
});
