/**
 * The part of a diff a small dialog can show: without the `---`/`+++` file headers (the dialog's
 * title names the file) and, when short of room, without notes and hunk headers, starting at the
 * first changed line, scrolled by `offset`. At 40x12 the
 * permission dialog still shows the lines it asks about, not three header lines.
 * @module
 */
import { renderDiff } from './diff';

export interface DiffWindow {
  /** Colored lines to print (at most `rows`, the last one a position line when it does not fit). */
  lines: string[];
  /** The offset actually used (clamped), for the next scroll step. */
  offset: number;
  /** Whether the diff is longer than the rows. */
  scrolls: boolean;
}

export function diffWindow(diff: string, rows: number, offset = 0): DiffWindow {
  const room = Math.max(1, rows);
  let body = diff.split('\n').filter((line) => !line.startsWith('---') && !line.startsWith('+++'));
  // Short of room, the notes ("\ No newline at end of file") and then the hunk headers go first.
  if (body.length > room) body = body.filter((line) => !line.startsWith('\\'));
  if (body.length > room) body = body.filter((line) => !line.startsWith('@@'));
  if (body.length <= room) return { lines: renderDiff(body.join('\n')), offset: 0, scrolls: false };
  const shown = Math.max(1, room - 1);
  const firstChange = Math.max(
    0,
    body.findIndex((line) => /^[+-]/.test(line)),
  );
  const max = body.length - shown;
  const start = Math.min(max, Math.max(0, firstChange + offset));
  const used = start - firstChange;
  const lines = renderDiff(body.slice(start, start + shown).join('\n'));
  lines.push(`lines ${start + 1}–${start + shown} of ${body.length} · pgup pgdn`);
  return { lines, offset: used, scrolls: true };
}
