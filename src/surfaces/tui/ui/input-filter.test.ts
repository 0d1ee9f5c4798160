import { describe, expect, it } from 'vitest';
import {
  createInputFilter,
  type FilterTimers,
  isKey,
  MAX_STRING_CHARS,
  PASTE_END,
  PASTE_START,
} from './input-filter';

describe('isKey', () => {
  it('takes text, the keys Ink names, alt with a key, and the kitty protocol keys', () => {
    const keys = ['a', 'abc', '\r', '\x03', '\x7f', '\x1b', '\x1b\x1b', '\x1b[A', '\x1bOA', '\x1b[1;5C'];
    keys.push(
      '\x1b[3~',
      '\x1b[5;2~',
      '\x1b[Z',
      '\x1b[[A',
      '\x1b[15~',
      '\x1b\x1b[A',
      '\x1bb',
      '\x1b\r',
      '\x1bé',
    );
    keys.push('\x1b[13;5u', '\x1b[99;5:1u', '\x1b[1;1:1A', '\x1b[3;1:3~');
    for (const key of keys) expect(isKey(key), JSON.stringify(key)).toBe(true);
  });

  it('drops escape sequences that name no key: SGR, terminal answers, unknown CSI, ESC and a control', () => {
    const other = ['\x1b[31m', '\x1b[0m', '\x1b[1m', '\x1b[12;40R', '\x1b[?62;22c', '\x1b[5n', '\x1b[>1;2m'];
    other.push('\x1b[99~', '\x1b[1;5:1m', '\x1b[201~', '\x1b\x1bx', '\x1b\x00', '\x1b\x07');
    for (const sequence of other) expect(isKey(sequence), JSON.stringify(sequence)).toBe(false);
  });
});

function timers(): FilterTimers & { armed: number; cleared: number; last?: () => void } {
  const t = {
    armed: 0,
    cleared: 0,
    last: undefined as (() => void) | undefined,
    set(fn: () => void) {
      t.armed++;
      t.last = fn;
      return t.armed;
    },
    clear() {
      t.cleared++;
    },
  };
  return t;
}

describe('createInputFilter', () => {
  it('hands a paste on as one end event with its text cleaned, once', () => {
    const filter = createInputFilter(() => {}, timers());
    expect(filter.filter(PASTE_START)).toBeUndefined();
    expect(filter.filter('\x1b[31m')).toBeUndefined();
    expect(filter.filter('red\r')).toBeUndefined();
    expect(filter.filter(PASTE_END)).toBe(PASTE_END);
    expect(filter.takePaste()).toEqual({ text: 'red\n' });
    expect(filter.takePaste()).toBeUndefined();
    expect(filter.filter('a')).toBe('a');
    expect(filter.takePaste()).toBeUndefined();
  });

  it('hands on typed text without control characters (but CR, LF, tab), a control key alone as it is', () => {
    const filter = createInputFilter(() => {});
    expect(filter.filter('a\x07b\x9b\x00c\r')).toBe('abc\r');
    expect(filter.filter('one\r\ntwo\tthree')).toBe('one\r\ntwo\tthree');
    expect(filter.filter('\u202e')).toBe('<U+202E>');
    expect(filter.filter('\x03')).toBe('\x03');
    expect(filter.filter('\r')).toBe('\r');
    expect(filter.filter('\x00\x07')).toBeUndefined();
    expect(filter.filter('\x9b')).toBeUndefined();
  });

  it('arms the idle timer again on each event of a paste and ends the paste when it fires', () => {
    const clock = timers();
    let ended = 0;
    const filter = createInputFilter(() => ended++, clock);
    filter.filter(PASTE_START);
    filter.filter('one');
    filter.filter('two');
    expect(clock.armed).toBe(3);
    expect(clock.cleared).toBe(2);
    clock.last?.();
    expect(ended).toBe(1);
    expect(filter.filter(PASTE_END)).toBe(PASTE_END);
    expect(filter.takePaste()).toEqual({ text: 'onetwo' });
    expect(clock.cleared).toBe(2);
    // A paste whose marker comes stops its timer.
    filter.filter(PASTE_START);
    filter.filter(PASTE_END);
    expect(clock.cleared).toBe(3);
    // A timer that fires with no paste open ends nothing.
    clock.last?.();
    expect(ended).toBe(1);
  });

  it('holds a paste only up to its cap: past it, says so at once (no text) and drops the rest until the marker', () => {
    const clock = timers();
    let ended = 0;
    const filter = createInputFilter(() => ended++, clock, 1000, 10);
    filter.filter(PASTE_START);
    expect(filter.filter('abcdef')).toBeUndefined();
    expect(filter.filter('ghij')).toBeUndefined();
    // The 11th character: the paste ends for the listeners now, too big, with nothing held.
    expect(filter.filter('k')).toBe(PASTE_END);
    expect(filter.takePaste()).toEqual({ text: '', tooBig: true });
    for (let i = 0; i < 100; i++) expect(filter.filter('more of it')).toBeUndefined();
    expect(filter.takePaste()).toBeUndefined();
    // Its marker ends it quietly (the listeners had their end already); keys are typed again.
    expect(filter.filter(PASTE_END)).toBeUndefined();
    expect(filter.filter('a')).toBe('a');
    // A paste of the cap exactly is whole.
    filter.filter(PASTE_START);
    filter.filter('0123456789');
    expect(filter.filter(PASTE_END)).toBe(PASTE_END);
    expect(filter.takePaste()).toEqual({ text: '0123456789' });
    // The rest of a too-big paste whose marker never comes ends with the idle time, quietly.
    filter.filter(PASTE_START);
    expect(filter.filter('x'.repeat(11))).toBe(PASTE_END);
    filter.filter('y');
    clock.last?.();
    expect(ended).toBe(0);
    expect(filter.filter('b')).toBe('b');
  });
});

describe('an OSC string outside a paste', () => {
  const typed = (filter: ReturnType<typeof createInputFilter>, events: string[]) =>
    events.map((e) => filter.filter(e)).filter((e) => e !== undefined);

  // Ink's input parser hands `ESC ]` on as one event (alt+]), its text as a text run, `ESC \` as one.
  it('is dropped whole: ended by BEL or ST, in one event or many', () => {
    const filter = createInputFilter(() => {});
    expect(typed(filter, ['a', '\x1b]', '0;title\x07bc'])).toEqual(['a', 'bc']);
    expect(typed(filter, ['\x1b]', '8;;http://e', 'xample.com/', '\x1b\\', 'link'])).toEqual(['link']);
    expect(typed(filter, ['\x1b]', '11;rgb:0000/0000/0000\x07'])).toEqual([]);
    // ST split across reads: Ink hands on its ESC alone, then the backslash and what follows.
    expect(typed(filter, ['\x1b]', '2;t', '\x1b', '\\x'])).toEqual(['x']);
    expect(typed(filter, ['\x1b]', '0;t', '\x1b', '\x1b', '\\y'])).toEqual(['y']);
    // Another escape sequence ends it and is a key as before.
    expect(typed(filter, ['\x1b]', '0;t', '\x1b[A', 'z'])).toEqual(['\x1b[A', 'z']);
    expect(typed(filter, ['\x1b]', '0;t', PASTE_START, 'p', PASTE_END])).toEqual([PASTE_END]);
    expect(filter.takePaste()).toEqual({ text: 'p' });
  });

  it(`that never ends is dropped after ${MAX_STRING_CHARS} characters, or after the idle time, and typing comes back`, () => {
    const clock = timers();
    const filter = createInputFilter(() => {}, clock);
    const body = 'o'.repeat(MAX_STRING_CHARS - 1);
    expect(typed(filter, ['\x1b]', body, 'oo', 'typed'])).toEqual(['o', 'typed']);
    expect(typed(filter, ['\x1b]', `${'q'.repeat(MAX_STRING_CHARS)}rest\x07`])).toEqual(['rest']);
    expect(typed(filter, ['\x1b]', '0;never ended'])).toEqual([]);
    clock.last?.();
    expect(typed(filter, ['after'])).toEqual(['after']);
  });

  it("inside a paste stays the paste's, which drops it when cleaned", () => {
    const filter = createInputFilter(() => {});
    expect(typed(filter, [PASTE_START, 'a', '\x1b]', '0;t\x07b', PASTE_END])).toEqual([PASTE_END]);
    expect(filter.takePaste()).toEqual({ text: 'ab' });
  });
});

describe('a DCS, APC, PM or SOS string, or a C1 one, outside a paste', () => {
  const typed = (filter: ReturnType<typeof createInputFilter>, events: string[]) =>
    events.map((e) => filter.filter(e)).filter((e) => e !== undefined);

  // Ink hands `ESC P`, `ESC _`, `ESC ^`, `ESC X` on as alt+P, alt+_, alt+^, alt+X, their text as typed text.
  it('is dropped whole: ended by ST, in one event or many; BEL ends none of them', () => {
    const filter = createInputFilter(() => {});
    // An XTGETTCAP answer, a kitty graphics answer, a PM, a SOS.
    expect(typed(filter, ['a', '\x1bP', '1+r544e=787465726d', '\x1b\\', 'b'])).toEqual(['a', 'b']);
    expect(typed(filter, ['\x1b_', 'Gi=31;OK', '\x1b\\', 'c'])).toEqual(['c']);
    expect(typed(filter, ['\x1b^', 'privacy', '\x1b', '\\d'])).toEqual(['d']);
    expect(typed(filter, ['\x1bX', 'start of\x07 string', '\x1b\\', 'e'])).toEqual(['e']);
    // The C1 ST ends them too; another escape sequence ends them and is a key.
    expect(typed(filter, ['\x1bP', '$r0m\x9cf'])).toEqual(['f']);
    expect(typed(filter, ['\x1b_', 'G', '\x1b[A', 'g'])).toEqual(['\x1b[A', 'g']);
  });

  it('in its one-character C1 form is dropped from typed text, across events, BEL ending OSC only', () => {
    const filter = createInputFilter(() => {});
    expect(typed(filter, ['a\x9d0;title\x07b'])).toEqual(['ab']);
    expect(typed(filter, ['a\x9d0;title\x9cb\x90$r0m\x9cc'])).toEqual(['abc']);
    expect(typed(filter, ['x\x9f', 'Gi=1;OK', '\x9cy'])).toEqual(['x', 'y']);
    expect(typed(filter, ['\x90', '1+r54\x07', '43', '\x9c\r'])).toEqual(['\r']);
    expect(typed(filter, ['\x9e', 'pm\x9cz\x98sos', '\x1b\\', 'w'])).toEqual(['z', 'w']);
    // Another escape sequence ends one.
    expect(typed(filter, ['\x9d8;;http://e', '\x1b[B', 'v'])).toEqual(['\x1b[B', 'v']);
  });

  it(`that never ends is dropped after ${MAX_STRING_CHARS} characters, or after the idle time`, () => {
    const clock = timers();
    const filter = createInputFilter(() => {}, clock);
    expect(typed(filter, ['\x1bP', 'p'.repeat(MAX_STRING_CHARS - 1), 'pp', 'typed'])).toEqual(['p', 'typed']);
    expect(typed(filter, [`\x9f${'q'.repeat(MAX_STRING_CHARS)}rest\x9c`])).toEqual(['rest']);
    expect(typed(filter, ['\x1bX', 'never ended'])).toEqual([]);
    clock.last?.();
    expect(typed(filter, ['after'])).toEqual(['after']);
    expect(typed(filter, ['\x98never ended'])).toEqual([]);
    clock.last?.();
    expect(typed(filter, ['again'])).toEqual(['again']);
  });

  it("inside a paste stays the paste's, which drops it when cleaned", () => {
    const filter = createInputFilter(() => {});
    expect(typed(filter, [PASTE_START, 'a', '\x1bP', '1$r', '\x1b\\', 'b\x9dc\x9cd', PASTE_END])).toEqual([
      PASTE_END,
    ]);
    expect(filter.takePaste()).toEqual({ text: 'abd' });
  });
});
