/**
 * Applying the hunks of one file's patch to its text. Hunks apply in file order; each is located
 * by its old lines (context and removed), first exactly, then ignoring trailing whitespace, then
 * ignoring indentation, then with typographic punctuation normalized (the levels Codex's
 * apply_patch uses). A Codex `@@ <context>` line is found first and the hunk applies after it;
 * a unified `@@ -l` line number picks the nearest match. Context lines keep the file's own text
 * (a fuzzy match never rewrites indentation it only matched loosely). A hunk that does not apply
 * is an error naming the file, the hunk and the closest near-miss in the file.
 * @module
 */
import { SvcError } from '../errors';
import type { Hunk, PatchFormat } from './patch-parse';

export type FuzzLevel = 'exact' | 'trailing_whitespace' | 'whitespace' | 'punctuation';
export const FUZZ_LEVELS: readonly FuzzLevel[] = [
  'exact',
  'trailing_whitespace',
  'whitespace',
  'punctuation',
];

export interface AppliedHunk {
  index: number;
  header: string;
  /** 1-based line of the original file where the hunk's old lines start (or are inserted). */
  line: number;
  fuzz: FuzzLevel;
}

export interface HunkApplication {
  text: string;
  hunks: AppliedHunk[];
}

/** Most line comparisons spent looking for the closest near-miss of a hunk that did not apply. */
const MAX_CLOSEST_WORK = 5_000_000;

export function applyHunks(
  path: string,
  original: string,
  hunks: Hunk[],
  format: PatchFormat,
): HunkApplication {
  const eol = original.includes('\r\n') ? '\r\n' : '\n';
  const finalNewline = original === '' || original.endsWith('\n');
  const lines = original === '' ? [] : original.replace(/\r?\n$/, '').split(/\r?\n/);
  const replacements: { at: number; remove: number; insert: string[]; hunk: Hunk }[] = [];
  const applied: AppliedHunk[] = [];
  let cursor = 0;
  const total = hunks.length;

  for (const hunk of hunks) {
    const where = `${path}, hunk ${hunk.index} of ${total} (${hunk.header})`;
    if (hunk.context !== undefined) {
      const found = seek(lines, [hunk.context], cursor, false);
      if (!found) {
        const earlier = seek(lines, [hunk.context], 0, false);
        throw hunkError(
          path,
          hunk,
          earlier
            ? `${where} did not apply: its @@ context line "${clip(hunk.context)}" occurs only at line ${earlier.at + 1}, before the previous hunk; hunks must be in file order`
            : `${where} did not apply: its @@ context line "${clip(hunk.context)}" is not in the file${cursor > 0 ? ` after line ${cursor}` : ''}`,
          earlier ? 'out_of_order' : 'context_line_not_found',
        );
      }
      cursor = found.at + 1;
    }
    let body = hunk.lines;
    let old = body.filter((l) => l.op !== '+').map((l) => l.text);
    if (old.length === 0) {
      // Pure addition: Codex appends at the end of the file; a unified diff says where.
      const at =
        format === 'unified' && hunk.oldStart !== undefined
          ? Math.min(hunk.oldStart, lines.length)
          : lines.length;
      replacements.push({ at, remove: 0, insert: body.map((l) => l.text), hunk });
      applied.push({ index: hunk.index, header: hunk.header, line: at + 1, fuzz: 'exact' });
      continue;
    }
    const hint = hunk.oldStart !== undefined ? Math.max(hunk.oldStart - 1, 0) : undefined;
    let found = seek(lines, old, cursor, hunk.endOfFile, hint);
    if (!found && body[body.length - 1]?.op === ' ' && body[body.length - 1]?.text === '') {
      // A trailing blank context line is often an artefact of how the patch was written.
      body = body.slice(0, -1);
      old = old.slice(0, -1);
      found = old.length ? seek(lines, old, cursor, hunk.endOfFile, hint) : undefined;
    }
    if (!found) {
      const earlier = cursor > 0 ? seek(lines, old, 0, false, hint) : undefined;
      if (earlier && earlier.at < cursor) {
        throw hunkError(
          path,
          hunk,
          `${where} did not apply: its lines match at line ${earlier.at + 1}, before the previous hunk ended (line ${cursor}); hunks must be in file order and must not overlap`,
          'out_of_order',
        );
      }
      throw hunkError(
        path,
        hunk,
        `${where} did not apply: its ${old.length} context and removed line${old.length === 1 ? '' : 's'} ${old.length === 1 ? 'was' : 'were'} not found in ${path}${cursor > 0 ? ` after line ${cursor}` : ''}${closest(lines, old)}`,
        'context_not_found',
      );
    }
    const insert: string[] = [];
    let position = found.at;
    for (const line of body) {
      if (line.op === ' ') insert.push(lines[position++]);
      else if (line.op === '-') position++;
      else insert.push(line.text);
    }
    replacements.push({ at: found.at, remove: old.length, insert, hunk });
    applied.push({ index: hunk.index, header: hunk.header, line: found.at + 1, fuzz: found.fuzz });
    cursor = found.at + old.length;
  }

  let result = [...lines];
  let endsWithNewline = format === 'codex' ? true : finalNewline;
  const sorted = replacements
    .map((r, order) => ({ ...r, order }))
    .sort((a, b) => b.at - a.at || b.order - a.order);
  for (const r of sorted) {
    if (format === 'unified' && r.at + r.remove >= lines.length) endsWithNewline = !r.hunk.newNoNewline;
    result = [...result.slice(0, r.at), ...r.insert, ...result.slice(r.at + r.remove)];
  }
  const text = result.length === 0 ? '' : `${result.join(eol)}${endsWithNewline ? eol : ''}`;
  return { text, hunks: applied };
}

interface Found {
  at: number;
  fuzz: FuzzLevel;
}

/** Find `pattern` in `lines` at or after `from`, trying each fuzz level in turn. */
function seek(
  lines: string[],
  pattern: string[],
  from: number,
  endOfFile: boolean,
  hint?: number,
): Found | undefined {
  const last = lines.length - pattern.length;
  if (last < from) return undefined;
  for (const fuzz of FUZZ_LEVELS) {
    const same = comparer(fuzz);
    const wanted = pattern.map((l) => same.key(l));
    const matchesAt = (i: number) => wanted.every((w, j) => same.key(lines[i + j]) === w);
    // Codex `*** End of File`: the old lines end the file; fall back to anywhere.
    if (endOfFile && matchesAt(last)) return { at: last, fuzz };
    let best: number | undefined;
    for (let i = from; i <= last; i++) {
      if (!matchesAt(i)) continue;
      if (hint === undefined) return { at: i, fuzz };
      if (best === undefined || Math.abs(i - hint) < Math.abs(best - hint)) best = i;
      else break; // past the hint, matches only get farther
    }
    if (best !== undefined) return { at: best, fuzz };
  }
  return undefined;
}

function comparer(fuzz: FuzzLevel): { key(line: string): string } {
  switch (fuzz) {
    case 'exact':
      return { key: (l) => l };
    case 'trailing_whitespace':
      return { key: (l) => l.trimEnd() };
    case 'whitespace':
      return { key: (l) => l.trim() };
    case 'punctuation':
      return { key: (l) => normalizePunctuation(l.trim()) };
    default: {
      const never: never = fuzz;
      throw new Error(`unknown fuzz level ${never}`);
    }
  }
}

function normalizePunctuation(line: string): string {
  return line
    .replace(/[\u2010-\u2015\u2212]/g, '-')
    .replace(/[\u2018\u2019\u201a\u201b]/g, "'")
    .replace(/[\u201c\u201d\u201e\u201f]/g, '"')
    .replace(/[\u00a0\u2002-\u200a\u202f\u205f\u3000]/g, ' ');
}

/** ". Closest: lines 40–43, where line 41 is "…" but the hunk expects "…"" — or nothing. */
function closest(lines: string[], pattern: string[]): string {
  if (lines.length === 0) return `. The file is empty`;
  if (lines.length * pattern.length > MAX_CLOSEST_WORK) return '';
  let best = { at: -1, score: 0 };
  const wanted = pattern.map((l) => l.trim());
  for (let i = 0; i + pattern.length <= lines.length; i++) {
    let score = 0;
    for (let j = 0; j < pattern.length; j++) if (lines[i + j].trim() === wanted[j]) score++;
    if (score > best.score) best = { at: i, score };
  }
  if (best.at < 0 || best.score === 0) {
    return '. No line of the hunk occurs in the file; view it again, it may have changed';
  }
  const j = wanted.findIndex((w, k) => lines[best.at + k].trim() !== w);
  const line = best.at + j;
  return `. Closest: lines ${best.at + 1}–${best.at + pattern.length} (${best.score} of ${pattern.length} lines match), where line ${line + 1} is "${clip(lines[line])}" but the hunk expects "${clip(pattern[j])}"`;
}

function hunkError(path: string, hunk: Hunk, message: string, reason: string): SvcError {
  return new SvcError(
    'invalid_input',
    `patch: ${message}. Nothing was written; view the file and redo the patch against its current content`,
    { details: { path, hunk: hunk.index, header: hunk.header, reason } },
  );
}

function clip(text: string, max = 100): string {
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}
