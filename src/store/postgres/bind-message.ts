/**
 * A statement's Bind message built by svc in one buffer (issue 18 item 6, p-pgvalue). pg-protocol's
 * `serialize.bind` writes each parameter with a `Buffer.byteLength` and a `buffer.write` (two calls
 * into C++ a parameter: a lone compat request's start and finish have ≈ 90 parameters each, most
 * ids and numbers) into a 256-byte writer that grows and copies several times on the way to 2–4 KB;
 * with pg's `prepareValue` it was ≈ 70–80 µs a statement in the live service at load
 * (bench/profile/bind-values-preload.cjs), ≈ 50 µs hot. Here the buffer is sized once (an upper
 * bound), a short ASCII string's bytes are stored by a loop in JavaScript, a longer one by one
 * `write`; arrays are their literals (./param-values.ts). Same bytes as pg's, byte for byte. A
 * value svc does not write (a Date, an object, a Buffer, an array of those) leaves the statement
 * to pg's own bind.
 * @module
 */
import { arrayLiteral } from './param-values';

/** Up to this many characters, an ASCII string is copied by a loop rather than `Buffer.write`. */
const SHORT = 48;
const BIND = 0x42; // 'B'

/** A parameter's text as pg's `prepareValue` makes it, null for SQL NULL, undefined: not svc's to write. */
function textOf(value: unknown): string | null | undefined {
  if (value === null || value === undefined) return null;
  switch (typeof value) {
    case 'string':
      return value;
    case 'number':
    case 'bigint':
    case 'boolean':
      return String(value);
    case 'object':
      return Array.isArray(value) ? arrayLiteral(value) : undefined;
    default:
      return undefined;
  }
}

/**
 * The Bind message of the unnamed portal for `statement` (its prepared name, '' unnamed) and
 * `values`, every parameter as text and every result column as text: what pg-protocol's
 * `serialize.bind({ statement, values, valueMapper: prepareValue })` makes. Undefined when a value
 * is not one svc writes (pg binds it then).
 */
export function bindMessage(statement: string, values: readonly unknown[]): Buffer | undefined {
  const count = values.length;
  if (count > 0xffff) return undefined;
  const texts: (string | null)[] = new Array(count);
  // code, length, portal '' and its 0, the name and its 0, format counts and codes, value count,
  // each value's length and at most 3 bytes a UTF-16 unit, the result format count and code.
  let size = 1 + 4 + 1 + statement.length * 3 + 1 + 2 + 2 * count + 2 + 4;
  for (let i = 0; i < count; i++) {
    const text = textOf(values[i]);
    if (text === undefined) return undefined;
    texts[i] = text;
    size += 4 + (text === null ? 0 : text.length * 3);
  }
  const buffer = Buffer.allocUnsafe(size);
  let at = 5;
  buffer[at++] = 0; // the unnamed portal
  at += buffer.write(statement, at, 'utf8');
  buffer[at++] = 0;
  buffer[at++] = count >>> 8;
  buffer[at++] = count & 0xff;
  buffer.fill(0, at, at + 2 * count); // every parameter as text
  at += 2 * count;
  buffer[at++] = count >>> 8;
  buffer[at++] = count & 0xff;
  for (let i = 0; i < count; i++) {
    const text = texts[i];
    if (text === null) {
      buffer.writeInt32BE(-1, at);
      at += 4;
      continue;
    }
    const lengthAt = at;
    at += 4;
    const length = text.length <= SHORT ? writeShort(buffer, text, at) : buffer.write(text, at, 'utf8');
    at += length;
    buffer.writeInt32BE(length, lengthAt);
  }
  buffer[at++] = 0; // one result format code: text
  buffer[at++] = 1;
  buffer[at++] = 0;
  buffer[at++] = 0;
  buffer[0] = BIND;
  buffer.writeInt32BE(at - 1, 1);
  return buffer.subarray(0, at);
}

/** `text`'s UTF-8 bytes at `at`, their count: a loop when ASCII, else `Buffer.write`. */
function writeShort(buffer: Buffer, text: string, at: number): number {
  const length = text.length;
  for (let i = 0; i < length; i++) {
    const code = text.charCodeAt(i);
    if (code > 0x7f) return buffer.write(text, at, 'utf8');
    buffer[at + i] = code;
  }
  return length;
}
