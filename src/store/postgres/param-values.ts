/**
 * A statement's array parameters as PostgreSQL array literals, built by svc before pg binds them
 * (issue 18, item 6). pg turns an array parameter into its literal at bind (`prepareValue` →
 * `arrayString`): per element a `prepareValue` call, a `toString` and `escapeElement`'s two regex
 * replaces, each a new string (≈ 0.2–0.4 ms of a lone PostgreSQL compat request at load: the
 * start's and the finish's session and run events go as `text[]` / `bigint[]` columns). Here an
 * array of strings, numbers, booleans, bigints, nulls (or arrays of those) becomes the same literal
 * text, byte for byte as pg's: a string with no control character and no surrogate is quoted by
 * `JSON.stringify` (native, one pass: for such a string it escapes exactly `"` and `\`, as pg's
 * `escapeElement`), any other string by pg's own two replaces. pg then only passes the literal on
 * (`prepareValue` of a string is the string). Any other element (a Date, an object, a Buffer)
 * leaves its array to pg as before.
 * @module
 */

/**
 * What `JSON.stringify` writes otherwise than an array literal's quoting: a control character
 * (as `\n`, `\u0000`) and a surrogate (a lone one as `\udxxx`; a pair is fine, but rare here).
 */
const NOT_AS_JSON = /[\u0000-\u001f\ud800-\udfff]/;

/**
 * `values` with each array svc can write turned into its literal: a new array when any is, else
 * `values` itself (no array, or none svc writes). The caller's array is never changed.
 */
export function literalValues<T extends unknown[] | undefined>(values: T): T {
  if (!values) return values;
  let out: unknown[] | undefined;
  for (let i = 0; i < values.length; i++) {
    const value = values[i];
    if (!Array.isArray(value)) continue;
    const literal = arrayLiteral(value);
    if (literal === undefined) continue;
    out ??= values.slice();
    out[i] = literal;
  }
  return (out ?? values) as T;
}

/** pg's `arrayString` of `list` when every element is one svc writes, else undefined. */
export function arrayLiteral(list: readonly unknown[]): string | undefined {
  let text = '{';
  for (let i = 0; i < list.length; i++) {
    if (i > 0) text += ',';
    const item = list[i];
    if (item === null || item === undefined) text += 'NULL';
    else if (typeof item === 'string') text += quoted(item);
    else if (typeof item === 'number' || typeof item === 'bigint' || typeof item === 'boolean')
      text += `"${String(item)}"`;
    else if (Array.isArray(item)) {
      const inner = arrayLiteral(item);
      if (inner === undefined) return undefined;
      text += inner;
    } else return undefined;
  }
  return `${text}}`;
}

/** An element's quoted text: `\` → `\\`, `"` → `\"` (pg's `escapeElement`). */
function quoted(text: string): string {
  if (!NOT_AS_JSON.test(text)) return JSON.stringify(text);
  return `"${text.replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"`;
}
