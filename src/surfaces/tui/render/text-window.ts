/**
 * What the permission dialog shows of a command or of a request's details: every line with its
 * control characters shown (`visibleControls`: `^[`, `^M`, `<U+202E>`), cut into rows of the
 * frame's width (nothing cut off at the edge) and windowed to the rows the dialog has, from the
 * first line on, with a position line (`+N more lines · pgdn`). However long the command, the
 * dialog stays within the screen: its title and the command's first line are what it opens on.
 * @module
 */
import { visibleControls } from '../../../util/terminal-text';

export interface TextWindow {
  /** Rows to print (at most `rows`, the last one a position line when the text does not fit). */
  lines: string[];
  /** The offset actually used (clamped). */
  offset: number;
  /** The largest offset (0 when the text fits). */
  maxOffset: number;
  /** Whether the text is longer than the rows. */
  scrolls: boolean;
  /** Whether the window shows the text's last row (the whole text has been on screen by now). */
  atEnd: boolean;
}

/**
 * The lines a request shows: a shell call's command (`$ …`), else each detail as `key: value`
 * (an object value, such as an MCP call's arguments, as compact JSON). Undefined when there are none.
 */
export function requestLines(details: Record<string, unknown>): string[] | undefined {
  if (typeof details.command === 'string') return shown(`$ ${details.command}`);
  const entries = Object.entries(details).filter(([, value]) => value !== undefined);
  if (!entries.length) return undefined;
  return entries.flatMap(([key, value]) =>
    shown(`${key}: ${typeof value === 'object' ? JSON.stringify(value) : String(value)}`),
  );
}

function shown(text: string): string[] {
  // A tab's width depends on the terminal: four spaces keep the rows countable.
  return visibleControls(text).replace(/\t/g, '    ').split('\n');
}

/**
 * Each line cut into rows of at most `width` columns (characters from U+1100 on counted as two,
 * so a row of wide characters still fits); an empty line stays one empty row.
 */
export function wrapRows(lines: string[], width: number): string[] {
  const max = Math.max(1, width);
  const rows: string[] = [];
  for (const line of lines) {
    let row = '';
    let used = 0;
    for (const ch of line) {
      const cells = ch.codePointAt(0)! >= 0x1100 ? 2 : 1;
      if (used + cells > max && row) {
        rows.push(row);
        row = '';
        used = 0;
      }
      row += ch;
      used += cells;
    }
    rows.push(row);
  }
  return rows;
}

/** `rows` windowed to `room` rows from `offset` (the first row at 0). */
export function textWindow(rows: string[], room: number, offset = 0): TextWindow {
  const fit = Math.max(1, room);
  if (rows.length <= fit) return { lines: rows, offset: 0, maxOffset: 0, scrolls: false, atEnd: true };
  const shownRows = Math.max(1, fit - 1);
  const maxOffset = rows.length - shownRows;
  const start = Math.min(maxOffset, Math.max(0, offset));
  const below = rows.length - (start + shownRows);
  const lines = rows.slice(start, start + shownRows);
  lines.push(
    below > 0
      ? `+${below} more line${below === 1 ? '' : 's'} · pgdn${start > 0 ? ' pgup' : ''}`
      : `lines ${start + 1}–${rows.length} of ${rows.length} · pgup`,
  );
  return { lines, offset: start, maxOffset, scrolls: true, atEnd: below === 0 };
}
