/**
 * Text an MCP server sends about its tools (names, titles, descriptions) made safe to show: it
 * reaches terminals, permission prompts, ACP clients and the model. Escape sequences and control
 * characters are removed and bidi controls written out as `<U+202E>` (`safeTerminalText`), so
 * they cannot act on a terminal or reorder what is shown, and the length is capped with an ellipsis.
 * @module
 */
import { capText, safeTerminalText } from '../util/terminal-text';

/** The longest name or title shown, in characters. */
export const MAX_LABEL_CHARS = 128;
/** The longest description passed on, in characters. */
export const MAX_DESCRIPTION_CHARS = 4096;

/** A one-line label (a tool name or title): line breaks and tabs become spaces. */
export function peerLabel(text: string, max = MAX_LABEL_CHARS): string {
  return capText(safeTerminalText(text).replace(/[\t\n]/g, ' '), max);
}

/** A description: keeps line breaks and tabs (a carriage return becomes a line break). */
export function peerText(text: string, max = MAX_DESCRIPTION_CHARS): string {
  return capText(safeTerminalText(text), max);
}
