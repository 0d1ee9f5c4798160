import type { Key } from 'ink';
import { describe, expect, it } from 'vitest';
import { type EditorKey, type EditorState, EMPTY, editKey } from './editor';
import { promptWindow } from './input-box';
import { COLLAPSE_CHARS, expandPastes, MAX_PROMPT_CHARS, promptState } from './paste';

const key = (patch: Partial<EditorKey> = {}): EditorKey =>
  ({
    upArrow: false,
    downArrow: false,
    leftArrow: false,
    rightArrow: false,
    pageDown: false,
    pageUp: false,
    home: false,
    end: false,
    return: false,
    escape: false,
    ctrl: false,
    shift: false,
    tab: false,
    backspace: false,
    delete: false,
    meta: false,
    super: false,
    hyper: false,
    capsLock: false,
    numLock: false,
    ...patch,
  }) as Key;

const type = (state: EditorState, text: string) => editKey(state, text, key()).state;

/** About 2 MB of numbered lines (no two alike, so a lost or doubled chunk shows). */
const twoMegabytes = () =>
  Array.from({ length: 40_000 }, (_, i) => `line ${i} ${'x'.repeat(40)} end`).join('\n');

function chunks(text: string, size: number): string[] {
  const out: string[] = [];
  for (let i = 0; i < text.length; i += size) out.push(text.slice(i, i + size));
  return out;
}

describe('a big paste in the prompt editor', () => {
  it('a 2 MB bracketed paste is one edit: the prompt shows a placeholder and sends the text whole', () => {
    const text = twoMegabytes();
    let s = type(EMPTY, 'see ');
    s = editKey(s, text, key({ paste: true })).state;
    s = type(s, ' thanks');
    expect(s.value).toBe('see [Pasted text #1 +39999 lines] thanks');
    const enter = editKey(s, '\r', key({ return: true }));
    expect(enter.action).toBe('submit');
    expect(expandPastes(enter.state)).toBe(`see ${text} thanks`);
  });

  it('a 2 MB paste read in 4 KiB chunks (no bracketed paste) keeps the text small per chunk and exact', () => {
    const text = twoMegabytes();
    let s = EMPTY;
    let longest = 0;
    const parts = chunks(text, 4096);
    for (const part of parts) {
      s = type(s, part);
      longest = Math.max(longest, s.value.length);
    }
    // Each chunk works on the editor's own text, which stays under the placeholder limit: the cost
    // of a chunk does not grow with what was pasted before it.
    expect(longest).toBeLessThanOrEqual(COLLAPSE_CHARS + 40);
    expect(s.pastes).toHaveLength(1);
    expect(s.value).toMatch(/^.*\[Pasted text #1 \+\d+ lines\]$/s);
    expect(expandPastes(s)).toBe(text);
  });

  it('a chunk that ends in a line break while a paste is open is more of the paste, not enter', () => {
    let s = type(EMPTY, 'y'.repeat(COLLAPSE_CHARS + 1));
    expect(s.value).toBe(`[Pasted text #1 ${COLLAPSE_CHARS + 1} chars]`);
    const r = editKey(s, 'more\r', key());
    expect(r.action).toBeUndefined();
    s = r.state;
    expect(expandPastes(s)).toBe(`${'y'.repeat(COLLAPSE_CHARS + 1)}more\n`);
    // A key in between closes the paste: the next chunk is typed text again.
    s = editKey(s, '', key({ end: true })).state;
    expect(type(s, 'ab').value).toBe('[Pasted text #1 +1 lines]ab');
  });

  it('small pastes go in as text, as before; one with its own line break does not send', () => {
    const s = editKey(EMPTY, 'one\r\ntwo\r', key({ paste: true }));
    expect(s.action).toBeUndefined();
    expect(s.state).toMatchObject({ value: 'one\ntwo\n', cursor: 8 });
    expect(s.state.pastes).toBeUndefined();
  });

  it('backspace after a placeholder takes the whole paste out', () => {
    let s = type(EMPTY, 'a ');
    s = editKey(s, 'z'.repeat(20_000), key({ paste: true })).state;
    s = editKey(s, '', key({ backspace: true })).state;
    expect(s).toMatchObject({ value: 'a ', cursor: 2, pastes: [] });
  });

  it(`a paste that would make the prompt longer than ${MAX_PROMPT_CHARS} characters is refused whole`, () => {
    const big = 'q'.repeat(MAX_PROMPT_CHARS);
    const start = type(EMPTY, 'hi ');
    const bracketed = editKey(start, big, key({ paste: true }));
    expect(bracketed.refused).toBe(MAX_PROMPT_CHARS);
    expect(expandPastes(bracketed.state)).toBe('hi ');
    expect(type(bracketed.state, 'ok').value).toBe('hi ok');
    // In chunks: the part already placed goes too, and the rest of the paste is dropped quietly.
    let s = start;
    let refused = 0;
    for (const part of chunks(big, 1 << 20)) {
      const r = editKey(s, part, key());
      s = r.state;
      refused += r.refused ? 1 : 0;
    }
    expect(refused).toBe(1);
    expect(expandPastes(s)).toBe('hi ');
    expect(type(editKey(s, '', key({ end: true })).state, 'ok').value).toBe('hi ok');
  });

  it('a big prompt from the history comes back collapsed and expands to the same text', () => {
    const text = `${'w'.repeat(COLLAPSE_CHARS)}\nmore`;
    const s = promptState(EMPTY, text);
    expect(s.value).toBe('[Pasted text #1 +1 lines]');
    expect(expandPastes(s)).toBe(text);
    expect(promptState(EMPTY, 'short')).toMatchObject({ value: 'short', cursor: 5 });
  });
});

describe('the prompt box', () => {
  it('reads only the lines it shows: the cursor line and those before it, or after it near the top', () => {
    const value = Array.from({ length: 100_000 }, (_, i) => `l${i}`).join('\n');
    const atEnd = promptWindow({ value, cursor: value.length }, 3);
    expect(atEnd).toMatchObject({
      lines: ['l99997', 'l99998', 'l99999'],
      first: 1,
      cursorLine: 3,
      column: 6,
    });
    const atTop = promptWindow({ value, cursor: 1 }, 3);
    expect(atTop).toMatchObject({ lines: ['l0', 'l1', 'l2'], first: 0, cursorLine: 0, column: 1 });
    const second = promptWindow({ value: 'a\nbc', cursor: 3 }, 6);
    expect(second).toMatchObject({ lines: ['a', 'bc'], first: 0, cursorLine: 1, column: 1 });
  });
});
