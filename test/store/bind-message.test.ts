/**
 * A statement's Bind message built by svc (issue 18 item 6, p-pgvalue,
 * src/store/postgres/bind-message.ts, its arrays' literals by ./param-values.ts): byte for byte
 * the message pg-protocol makes with pg's own `prepareValue`, so the server reads the same values;
 * what svc does not write is left to pg.
 */
import { describe, expect, it } from 'vitest';
import { bindMessage } from '../../src/store/postgres/bind-message';
import { arrayLiteral } from '../../src/store/postgres/param-values';
import { pgBindMessage, pgPrepareValue } from '../helpers/pg-bind-counts';

/** Strings an element may hold: quotes, backslashes, JSON text, control characters, surrogates. */
const STRINGS = [
  '',
  'plain',
  'session.created',
  'NULL',
  'a,b',
  '{braces}',
  ' spaced ',
  'say "hi"',
  'back\\slash',
  '\\"',
  JSON.stringify({ text: 'a "quoted" \\ word\nnext', n: 1.5, nested: { list: [1, 'two'] } }),
  'line\nbreak',
  'tab\there',
  'nul\u0000byte',
  '\u001f\u007f',
  'é ü 中文',
  'emoji 😀 pair',
  'lone \ud800 high',
  'lone \udc00 low',
  '\u2028\u2029',
];

describe('a Bind message built by svc', () => {
  it('STORE-PG-900: each array of strings, numbers, booleans, bigints, nulls (nested too) becomes exactly the text pg’s `prepareValue` makes; other values and arrays (a Date, an object, a Buffer) are left to pg', () => {
    const arrays: unknown[][] = [
      [],
      STRINGS,
      ...STRINGS.map((s) => [s]),
      [1, 0, -0, -7, 1.5, 1e21, Number.NaN, Number.POSITIVE_INFINITY, 2 ** 53],
      [10n, -3n],
      [true, false],
      [null, undefined, 'x', null],
      [
        ['a', 'b"'],
        ['c\\', null],
      ],
      [[], []],
      [1733300000000, 'mixed', null, true],
    ];
    for (const array of arrays) expect(arrayLiteral(array)).toBe(pgPrepareValue(array));
    const date = new Date(0);
    const left = [[date], [{ a: 1 }], [Buffer.from('x')], [['a'], [date]]];
    for (const array of left) expect(arrayLiteral(array)).toBeUndefined();
  });

  it('STORE-PG-901: a Bind message of strings (short and long, ASCII or not, surrogates), numbers, bigints, booleans, nulls, undefined and arrays of those is exactly pg-protocol’s with pg’s `prepareValue`, named or not; a Date, an object, a Buffer or an array of those is left to pg', () => {
    const long = `${'x'.repeat(60)} é ${'"'.repeat(5)} 😀 ${'y'.repeat(200)}`;
    const values: unknown[] = [
      ...STRINGS,
      long,
      'é'.repeat(48),
      'a'.repeat(48),
      'a'.repeat(49),
      1796380101763,
      -0,
      1.5,
      Number.NaN,
      -269740946200075959n,
      true,
      false,
      null,
      undefined,
      [],
      STRINGS,
      [1, 2, null],
      [['a'], ['b"']],
    ];
    for (const name of ['', 'svc_p5', 'svc_p123456']) {
      expect(bindMessage(name, values)?.equals(pgBindMessage(name, values))).toBe(true);
      expect(bindMessage(name, [])?.equals(pgBindMessage(name, []))).toBe(true);
      const many = Array.from({ length: 300 }, (_, i) => (i % 3 === 0 ? i : i % 3 === 1 ? `v${i}` : null));
      expect(bindMessage(name, many)?.equals(pgBindMessage(name, many))).toBe(true);
    }
    for (const other of [new Date(0), { a: 1 }, Buffer.from('x'), [new Date(0)], () => 1, Symbol('s')])
      expect(bindMessage('svc_p1', ['a', other])).toBeUndefined();
  });
});
