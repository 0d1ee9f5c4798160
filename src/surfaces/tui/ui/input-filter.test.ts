import { describe, expect, it } from 'vitest';
import { createInputFilter, isKey, PASTE_END, PASTE_START } from './input-filter';

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
  it('hands a paste on as one end event with its text cleaned, once', () => {
    const filter = createInputFilter();
    expect(filter.filter(PASTE_START)).toBeUndefined();
    expect(filter.filter('\x1b[31m')).toBeUndefined();
    expect(filter.filter('red\r')).toBeUndefined();
    expect(filter.filter(PASTE_END)).toBe(PASTE_END);
    expect(filter.takePaste()).toBe('red\n');
    expect(filter.takePaste()).toBeUndefined();
    expect(filter.filter('a')).toBe('a');
    expect(filter.takePaste()).toBeUndefined();
  });
});
