/**
 * Text an MCP server sends about its tools (names, titles, descriptions) made safe to show: it
 * reaches terminals, permission prompts, ACP clients and the model. C0/C1 control characters
 * (ANSI escape sequences lose their ESC, OSC 52 its BEL) are dropped, bidi controls are written
 * out as `\u202e` so they cannot reorder what is shown, and the length is capped with an ellipsis.
 * @module
 */

/** The longest name or title shown, in characters. */
export const MAX_LABEL_CHARS = 128;
/** The longest description passed on, in characters. */
export const MAX_DESCRIPTION_CHARS = 4096;

const CONTROLS = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/g;
const LINE_BREAKS = /[\t\n]/g;
const BIDI = /[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;

const escapeBidi = (text: string) =>
  text.replace(BIDI, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);

/** At most `max` characters, the last an ellipsis when cut (never half a surrogate pair). */
export function capText(text: string, max: number): string {
  if (text.length <= max) return text;
  let end = max - 1;
  const last = text.charCodeAt(end - 1);
  if (last >= 0xd800 && last <= 0xdbff) end--;
  return `${text.slice(0, end)}…`;
}

/** A one-line label (a tool name or title): line breaks and tabs become spaces. */
export function peerLabel(text: string, max = MAX_LABEL_CHARS): string {
  return capText(escapeBidi(text.replace(LINE_BREAKS, ' ').replace(CONTROLS, '')), max);
}

/** A description: keeps line breaks and tabs (CRLF becomes LF), drops the other controls. */
export function peerText(text: string, max = MAX_DESCRIPTION_CHARS): string {
  return capText(escapeBidi(text.replace(/\r\n/g, '\n').replace(CONTROLS, '')), max);
}
