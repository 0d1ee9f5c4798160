/**
 * A statement's array parameter as its PostgreSQL array literal, for the Bind message svc writes
 * (./bind-message.ts; issue 18, item 6). pg makes it at bind (`prepareValue` → `arrayString`: per
 * element a `prepareValue` call, a `toString` and `escapeElement`'s two regex replaces); the
 * start's and the finish's session and run events go as `text[]` / `bigint[]` columns (21 arrays a
 * lone compat request). Here an array of strings, numbers, booleans, bigints, nulls (or arrays of
 * those) becomes the same literal text, byte for byte as pg's: a string with no control character
 * and no surrogate is quoted by `JSON.stringify` (native, one pass: for such a string it escapes
 * exactly `"` and `\`, as pg's `escapeElement`), any other string by pg's own two replaces. Any
 * other element (a Date, an object, a Buffer) leaves the statement to pg.
 * @module
 */

/**
 * What `JSON.stringify` writes otherwise than an array literal's quoting: a control character
 * (as `\n`, `\u0000`) and a surrogate (a lone one as `\udxxx`; a pair is fine, but rare here).
 */
const NOT_AS_JSON = /[\u0000-\u001f\ud800-\udfff]/;

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
