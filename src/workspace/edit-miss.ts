/**
 * Why an edit's old_string was not found: the closest region of the file (line range, similarity,
 * its current text, capped) and what differs there (indentation, spacing, a changed token), so
 * the model can copy the right text instead of guessing again.
 * @module
 */
import { leadingWhitespace } from './edit-indent';
import { type Bigrams, bigrams, dice, type FileLines, isBlank, splitModel, squeeze } from './edit-match';

export interface ClosestRegion {
  start_line: number;
  end_line: number;
  /** Mean line similarity, 0–1, with spacing ignored. */
  similarity: number;
}

export interface MissReport {
  message: string;
  closest?: ClosestRegion;
}

/** Line comparisons spent scoring every window; past it only the likeliest windows are scored. */
const FULL_SCAN_WORK = 4_000;
const SHORTLIST = 64;
const MAX_SHOWN_LINES = 15;
const MAX_SHOWN_CHARS = 2000;
/** Below this the closest region is named, but not offered as the text to copy. */
const CLOSE_ENOUGH = 0.5;

/** Describe a miss of `oldText` in `file`; `base` opens the message ("old_string was not found in a.ts"). */
export function describeMiss(file: FileLines, oldText: string, base: string, note = ''): MissReport {
  const wanted = splitModel(oldText).lines;
  const n = file.count;
  if (n === 0) return { message: `${base}: the file is empty${note}. Use write to give it content` };
  const m = Math.min(wanted.length, n);
  const best = closestWindow(file, wanted.slice(0, m));
  const closest: ClosestRegion = {
    start_line: best.at + 1,
    end_line: best.at + m,
    similarity: Math.round(best.score * 100) / 100,
  };
  const range = m === 1 ? `line ${closest.start_line}` : `lines ${closest.start_line}–${closest.end_line}`;
  if (best.score < CLOSE_ENOUGH) {
    return {
      closest,
      message: `${base}${note}, and no part of the file is close to it (the nearest, ${range}, has similarity ${closest.similarity}). The file may have changed or the text was retyped inexactly; view the file again and copy old_string exactly (whitespace included)`,
    };
  }
  const region = file.lines.slice(best.at, best.at + m);
  const what = differences(region, wanted.slice(0, m), best.at, wanted.length - m);
  return {
    closest,
    message: `${base}${note}. Closest: ${range} (similarity ${closest.similarity}), where ${what}. The file there reads:\n${shown(region)}\nCopy old_string from that text exactly (whitespace included), or view the file again if it changed`,
  };
}

function closestWindow(file: FileLines, wanted: string[]): { at: number; score: number } {
  const m = wanted.length;
  const last = file.count - m;
  const keys = file.keys(squeeze);
  const wantedKeys = wanted.map(squeeze);
  const fileGrams = new Map<number, Bigrams>();
  const wantedGrams = wantedKeys.map(bigrams);
  const gramsOf = (i: number) => {
    let grams = fileGrams.get(i);
    if (!grams) {
      grams = bigrams(keys[i]);
      fileGrams.set(i, grams);
    }
    return grams;
  };
  const lineScore = (i: number, j: number) =>
    keys[i] === wantedKeys[j] ? 1 : dice(gramsOf(i), wantedGrams[j]);
  const windowScore = (i: number) => {
    let sum = 0;
    for (let j = 0; j < m; j++) sum += lineScore(i + j, j);
    return sum / m;
  };
  let starts: number[];
  if ((last + 1) * m <= FULL_SCAN_WORK) starts = Array.from({ length: last + 1 }, (_, i) => i);
  else {
    starts = [
      ...new Set([...shortlist(keys, wantedKeys, last), ...likestFirstLine(wantedKeys, last, lineScore)]),
    ];
  }
  let best = { at: 0, score: -1 };
  for (const i of starts) {
    const score = windowScore(i);
    if (score > best.score) best = { at: i, score };
  }
  return best;
}

/** The windows with the most lines equal to old_string's (spacing aside). */
function shortlist(keys: string[], wanted: string[], last: number): number[] {
  const index = new Map<string, number[]>();
  for (const [j, key] of wanted.entries()) {
    if (key === '') continue;
    index.set(key, [...(index.get(key) ?? []), j]);
  }
  const counts = new Map<number, number>();
  for (const [i, key] of keys.entries()) {
    for (const j of index.get(key) ?? []) {
      const at = i - j;
      if (at >= 0 && at <= last) counts.set(at, (counts.get(at) ?? 0) + 1);
    }
  }
  return [...counts.entries()]
    .sort((a, b) => b[1] - a[1] || a[0] - b[0])
    .slice(0, SHORTLIST)
    .map(([at]) => at);
}

/** The windows whose first non-blank line is likest old_string's (for when no line is equal). */
function likestFirstLine(
  wanted: string[],
  last: number,
  lineScore: (i: number, j: number) => number,
): number[] {
  const j = Math.max(
    wanted.findIndex((k) => k !== ''),
    0,
  );
  const scored: Array<[number, number]> = [];
  for (let at = 0; at <= last; at++) scored.push([at, lineScore(at + j, j)]);
  return scored
    .sort((a, b) => b[1] - a[1])
    .slice(0, SHORTLIST)
    .map(([at]) => at);
}

function differences(region: string[], wanted: string[], at: number, extra: number): string {
  const found: string[] = [];
  const tokenLine = wanted.findIndex((w, j) => squeeze(w) !== squeeze(region[j]));
  if (tokenLine >= 0) {
    const count = wanted.filter((w, j) => squeeze(w) !== squeeze(region[j])).length;
    found.push(
      `line ${at + tokenLine + 1} ${tokenDifference(region[tokenLine], wanted[tokenLine])}${count > 1 ? ` (${count} of ${wanted.length} lines differ)` : ''}`,
    );
  } else {
    // A first line without indentation starts at the text, as an exact match may: not a difference.
    const from = leadingWhitespace(wanted[0]) === '' ? 1 : 0;
    const indentLine = wanted.findIndex(
      (w, j) => j >= from && !isBlank(w) && leadingWhitespace(w) !== leadingWhitespace(region[j]),
    );
    if (indentLine >= 0) {
      found.push(
        `the indentation differs: line ${at + indentLine + 1} is indented with ${describeIndent(leadingWhitespace(region[indentLine]))} but old_string with ${describeIndent(leadingWhitespace(wanted[indentLine]))}, and new_string's lines could not be re-indented to match unambiguously`,
      );
    } else {
      found.push('only the spacing inside lines or at their ends differs');
    }
  }
  if (extra > 0) found.push(`old_string has ${extra} more line${extra === 1 ? '' : 's'} than the file`);
  return found.join('; ');
}

/** 'has `this._name` where old_string has `this.name`' for the first differing span of tokens. */
function tokenDifference(actual: string, expected: string): string {
  const a = tokens(actual);
  const b = tokens(expected);
  let head = 0;
  while (head < a.length && head < b.length && a[head].text === b[head].text) head++;
  let tail = 0;
  while (
    tail < a.length - head &&
    tail < b.length - head &&
    a[a.length - 1 - tail].text === b[b.length - 1 - tail].text
  ) {
    tail++;
  }
  const span = (line: string, list: typeof a) =>
    list.length - tail > head ? line.slice(list[head].start, list[list.length - 1 - tail].end) : '';
  const inFile = clip(span(actual, a), 80);
  const inOld = clip(span(expected, b), 80);
  if (!inFile && !inOld) return 'differs only in spacing';
  if (!inFile) return `lacks \`${inOld}\` that old_string has`;
  if (!inOld) return `has \`${inFile}\` that old_string lacks`;
  return `has \`${inFile}\` where old_string has \`${inOld}\``;
}

function tokens(line: string): Array<{ text: string; start: number; end: number }> {
  return [...line.matchAll(/[\w$]+|\S/g)].map((t) => ({
    text: t[0],
    start: t.index ?? 0,
    end: (t.index ?? 0) + t[0].length,
  }));
}

function describeIndent(indent: string): string {
  if (indent === '') return 'no indentation';
  const tabs = [...indent].filter((c) => c === '\t').length;
  const spaces = indent.length - tabs;
  const parts = [];
  if (tabs) parts.push(`${tabs} tab${tabs === 1 ? '' : 's'}`);
  if (spaces) parts.push(`${spaces} space${spaces === 1 ? '' : 's'}`);
  return parts.join(' and ');
}

function shown(region: string[]): string {
  const lines = region.slice(0, MAX_SHOWN_LINES).map((l) => clip(l, 200));
  let text = lines.join('\n');
  if (text.length > MAX_SHOWN_CHARS) text = `${text.slice(0, MAX_SHOWN_CHARS)}…`;
  const more = region.length - lines.length;
  return more > 0 ? `${text}\n… (${more} more line${more === 1 ? '' : 's'})` : text;
}

export function clip(text: string, max = 100): string {
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}
