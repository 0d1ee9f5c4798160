/**
 * Text from outside (a file name, a schedule name, a cron expression) made safe to echo on a
 * terminal or in an error: control characters (C0, DEL, C1: newlines, ESC sequences, BEL) and
 * bidirectional overrides (U+202E…) become `\u{…}` escapes, and a long value is cut.
 * @module
 */

/** Control characters and bidi controls: what can move the cursor, restyle, or reorder text. */
export const UNPRINTABLE = /[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/;
const UNPRINTABLE_ALL = new RegExp(UNPRINTABLE.source, 'g');

/** `text` with unprintable characters escaped, at most `max` characters of it (then `…`). */
export function printable(text: string, max = Number.POSITIVE_INFINITY): string {
  const cut = text.length > max ? `${text.slice(0, max)}…` : text;
  return cut.replace(
    UNPRINTABLE_ALL,
    (char) => `\\u{${(char.codePointAt(0) as number).toString(16).padStart(4, '0')}}`,
  );
}
