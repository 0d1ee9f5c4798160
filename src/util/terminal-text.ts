/**
 * Text from outside svc (model output, a command's output, a file name, a remote peer's answer)
 * made safe to write to a terminal. A terminal acts on control characters instead of showing them:
 * `ESC ]52;…` writes the clipboard, `ESC ]0;…` the window title, `ESC [2K` and `\r` rewrite the
 * line (a permission prompt could show another command than the one that runs), SGR 8 hides text,
 * and the bidi overrides (U+202E …) show characters in another order than they run (Trojan Source).
 *
 * - `safeTerminalText`: for reading (transcripts, model text, listings): escape sequences and
 *   the other control characters are removed, a lone `\r` becomes a newline, `\n` and `\t` stay;
 *   bidi overrides and isolates are shown as `<U+202E>`.
 * - `visibleControls`: for what a person approves (a command): nothing is removed, every control
 *   character but `\n` and `\t` is shown (`^[` for ESC, `^M` for `\r`, `<U+009B>`, `<U+202E>`).
 * - `printable`: one line of outside text echoed in an error or a listing (a name, a cron
 *   expression): `visibleControls` with `\n` and `\t` shown too (`^J`, `^I`), cut at a length.
 *
 * Both work a character at a time, so a sequence split across two streamed chunks is as inert as
 * a whole one.
 * @module
 */

// A whole escape sequence: CSI (`ESC [` … final byte), OSC/DCS/SOS/PM/APC (… BEL or ST), or ESC + one byte.
const SEQUENCE =
  /\x1b\[[0-?]*[ -/]*[@-~]|\x1b[\]PX^_][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b[ -/]*[0-~]|\x9b[0-?]*[ -/]*[@-~]|[\x90\x98\x9d\x9e\x9f][^\x07\x1b\x9c]*(?:\x07|\x1b\\|\x9c)?/g;
const CONTROL = /[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]/g;
/** Bidi embeddings, overrides, isolates and marks: they reorder what is shown. */
const BIDI = /[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;

const codePoint = (ch: string) => `<U+${ch.codePointAt(0)!.toString(16).toUpperCase().padStart(4, '0')}>`;

/** `text` to read on a terminal: escape sequences and control characters removed (see the module). */
export function safeTerminalText(text: string): string {
  if (!needsWork(text)) return text;
  return text
    .replace(SEQUENCE, '')
    .replace(/\r\n/g, '\n')
    .replace(/\r/g, '\n')
    .replace(CONTROL, '')
    .replace(BIDI, codePoint);
}

/** `text` to approve on a terminal: every control character shown, none removed (see the module). */
export function visibleControls(text: string): string {
  if (!needsWork(text)) return text;
  return text
    .replace(CONTROL, (ch) => {
      const code = ch.charCodeAt(0);
      if (code < 0x20) return `^${String.fromCharCode(code + 0x40)}`;
      if (code === 0x7f) return '^?';
      return codePoint(ch);
    })
    .replace(/\r/g, '^M')
    .replace(BIDI, codePoint);
}

/** Control characters (newline and tab included) and bidi controls: what a one-line name must not hold. */
export const UNPRINTABLE = /[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/;

/** At most `max` characters, the last an ellipsis when cut (never half a surrogate pair). */
export function capText(text: string, max: number): string {
  if (text.length <= max) return text;
  let end = max - 1;
  const last = text.charCodeAt(end - 1);
  if (last >= 0xd800 && last <= 0xdbff) end--;
  return `${text.slice(0, end)}…`;
}

/** One line of outside text, every control character shown (see the module), cut to `max` characters with `capText` first. */
export function printable(text: string, max = Number.POSITIVE_INFINITY): string {
  return visibleControls(capText(text, max).replace(/\n/g, '^J').replace(/\t/g, '^I'));
}

/** Whether `text` has anything either function changes (most text has none: no copy made). */
function needsWork(text: string): boolean {
  return /[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/.test(text);
}
