import { describe, expect, it } from 'vitest';
import { createInputFilter, type FilterTimers, isKey, PASTE_END, PASTE_START } from './input-filter';

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

describe('createInputFilter', () => {
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

  it('hands a paste on as one end event with its text cleaned, once', () => {
    const filter = createInputFilter(() => {}, timers());
    expect(filter.filter(PASTE_START)).toBeUndefined();
    expect(filter.filter('\x1b[31m')).toBeUndefined();
    expect(filter.filter('red\r')).toBeUndefined();
    expect(filter.filter(PASTE_END)).toBe(PASTE_END);
    expect(filter.takePaste()).toBe('red\n');
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
    expect(filter.takePaste()).toBe('onetwo');
    expect(clock.cleared).toBe(2);
    // A paste whose marker comes stops its timer.
    filter.filter(PASTE_START);
    filter.filter(PASTE_END);
    expect(clock.cleared).toBe(3);
    // A timer that fires with no paste open ends nothing.
    clock.last?.();
    expect(ended).toBe(1);
  });
});
