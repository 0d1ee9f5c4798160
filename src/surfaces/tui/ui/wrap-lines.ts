/**
 * Word wrapping for the scrollable text views (help, /why): a long line continues on the next
 * rows under its own indent instead of being cut at the frame's edge.
 * @module
 */

/** `text` in rows of at most `width` characters, breaking at spaces (a longer word is split). */
export function wrapText(text: string, width: number): string[] {
  const max = Math.max(1, width);
  const rows: string[] = [];
  let row = '';
  for (const word of text.split(/\s+/).filter(Boolean)) {
    let rest = word;
    while (rest.length > max) {
      if (row) {
        rows.push(row);
        row = '';
      }
      rows.push(rest.slice(0, max));
      rest = rest.slice(max);
    }
    if (!row) row = rest;
    else if (row.length + 1 + rest.length <= max) row += ` ${rest}`;
    else {
      rows.push(row);
      row = rest;
    }
  }
  if (row || rows.length === 0) rows.push(row);
  return rows;
}

/** Each line wrapped to `width`; continuation rows keep the line's leading indent (plus two). */
export function wrapLines(lines: string[], width: number): string[] {
  const out: string[] = [];
  for (const line of lines) {
    if (line.length <= width) {
      out.push(line);
      continue;
    }
    const indent = /^\s*/.exec(line)?.[0] ?? '';
    const hanging = indent.length + 2 < width / 2 ? `${indent}  ` : '';
    const [first, ...rest] = wrapText(line.trim(), width - indent.length);
    out.push(`${indent}${first}`);
    for (const row of rest.flatMap((r) => wrapText(r, width - hanging.length))) out.push(`${hanging}${row}`);
  }
  return out;
}

/**
 * Two columns (a key or command, then its description) in `width`: the description wraps under
 * its own column; a left side too wide for its column gets a row of its own.
 */
export function columnLines(rows: [string, string][], width: number, indent = 2, maxLeft = 38): string[] {
  const col = Math.min(maxLeft, Math.max(10, Math.floor((width - indent) * 0.45)));
  const descWidth = Math.max(10, width - indent - col - 1);
  const pad = ' '.repeat(indent);
  const out: string[] = [];
  for (const [left, description] of rows) {
    const wrapped = wrapText(description, descWidth);
    if (left.length > col) {
      for (const row of wrapText(left, width - indent)) out.push(`${pad}${row}`);
      for (const row of wrapped) out.push(`${pad}${' '.repeat(col + 1)}${row}`);
      continue;
    }
    out.push(`${pad}${left.padEnd(col)} ${wrapped[0]}`);
    for (const row of wrapped.slice(1)) out.push(`${pad}${' '.repeat(col + 1)}${row}`);
  }
  return out;
}

/** Longest line the transcript draws whole: Ink wraps a line on every frame, and a 200,000-character one froze it. */
export const LONGEST_LINE = 10_000;

/** Rows one transcript line takes at most (about: Ink breaks at words). */
export const LINE_ROWS = 40;

/** The longest line drawn whole on a terminal `width` columns wide (`LONGEST_LINE` when unknown). */
export function longestLine(width?: number): number {
  return width ? Math.min(LONGEST_LINE, LINE_ROWS * Math.max(20, width)) : LONGEST_LINE;
}

/** A prompt longer than this shows its first `PROMPT_LINES` lines in the transcript, then how much more. */
export const LONGEST_PROMPT = 10_000;
export const PROMPT_LINES = 20;

/**
 * A prompt as the transcript shows it: a long one (a big paste) by its first lines, then
 * `… N more lines (M characters)`; printing a 2 MB prompt whole took Ink most of a minute.
 */
export function foldPrompt(text: string, max = LONGEST_LINE): string {
  if (text.length <= LONGEST_PROMPT) return foldLongLines(text, max);
  let end = -1;
  for (let n = 0; n < PROMPT_LINES; n++) {
    const next = text.indexOf('\n', end + 1);
    if (next === -1 || next > LONGEST_PROMPT) break;
    end = next;
  }
  const head = end === -1 ? text.slice(0, Math.min(max, LONGEST_PROMPT)) : text.slice(0, end);
  const rest = text.slice(head.length);
  let lines = 0;
  for (let i = rest.indexOf('\n'); i !== -1; i = rest.indexOf('\n', i + 1)) lines++;
  const more = lines ? `${lines} more line${lines === 1 ? '' : 's'}, ` : '';
  return `${foldLongLines(head, max)}\n… (${more}${rest.length} more characters)`;
}

/** `text` with each line longer than `max` cut there and `… N more characters` after it. */
export function foldLongLines(text: string, max = LONGEST_LINE): string {
  if (text.length <= max) return text;
  return text
    .split('\n')
    .map((line) =>
      line.length <= max ? line : `${line.slice(0, max)} … ${line.length - max} more characters`,
    )
    .join('\n');
}
