/**
 * The loose levels of the edit cascade, on whole lines: when old_string is not in the file
 * exactly, its lines are looked for with trailing whitespace ignored, then indentation ignored,
 * then spacing inside lines ignored, then as a block whose first and last lines match and whose
 * other lines all match but a few near-identical ones. A level applies only when it finds exactly
 * one place; two or more is ambiguity and stops the cascade, because a looser level would only
 * find more. The replacement keeps the file's own text for the lines new_string repeats from
 * old_string (context) and re-indents the changed lines the way old_string's lines map onto the
 * file's (src/workspace/edit-indent.ts).
 * @module
 */
import { detectIndentUnit, leadingWhitespace, mapIndentation } from './edit-indent';

export type LineLevel = 'trailing_whitespace' | 'indentation' | 'whitespace' | 'block_anchor';
export const LINE_LEVELS: readonly LineLevel[] = [
  'trailing_whitespace',
  'indentation',
  'whitespace',
  'block_anchor',
];

/** Block anchor: the least similarity of a middle line that differs, and how many may differ. */
const ANCHOR_MIN_SIMILARITY = 0.75;
const ANCHOR_MIN_LINES = 3;
const ANCHOR_LINES_PER_DIFFERENCE = 4;

export interface FileLines {
  /** Lines without their line ending. */
  lines: string[];
  /** Character offset where each line starts, and where its text ends (before \r\n or \n). */
  starts: number[];
  ends: number[];
  /** Line ending after each line ('' for a last line without one). */
  eols: string[];
  /** Lines a match may cover: a final newline does not start another line. */
  count: number;
  eol: string;
  unit: () => string | undefined;
  /** Every line through `key`, computed once per key function. */
  keys: (key: (line: string) => string) => string[];
}

export interface ModelLines {
  lines: string[];
  /** The text starts / ends with a line break: the match starts at the end of the line before / takes the line break after. */
  leading: boolean;
  trailing: boolean;
}

export type LineMatch =
  | { kind: 'applied'; level: LineLevel; start: number; end: number; replacement: string; line: number }
  | { kind: 'ambiguous'; level: LineLevel; lines: number[] }
  | { kind: 'none' };

export function splitFile(content: string): FileLines {
  const raw = content.split('\n');
  const lines: string[] = [];
  const starts: number[] = [];
  const ends: number[] = [];
  const eols: string[] = [];
  let offset = 0;
  let crlf = 0;
  for (const [index, piece] of raw.entries()) {
    const last = index === raw.length - 1;
    const cr = !last && piece.endsWith('\r');
    if (cr) crlf++;
    const text = cr ? piece.slice(0, -1) : piece;
    lines.push(text);
    starts.push(offset);
    ends.push(offset + text.length);
    eols.push(last ? '' : cr ? '\r\n' : '\n');
    offset += piece.length + 1;
  }
  let unit: string | undefined | null = null;
  const keyed = new Map<(line: string) => string, string[]>();
  return {
    keys: (key) => {
      let list = keyed.get(key);
      if (!list) {
        list = lines.map(key);
        keyed.set(key, list);
      }
      return list;
    },
    lines,
    starts,
    ends,
    eols,
    count: content.endsWith('\n') ? lines.length - 1 : lines.length,
    eol: crlf * 2 > raw.length - 1 ? '\r\n' : '\n',
    unit: () => {
      if (unit === null) unit = detectIndentUnit(lines);
      return unit;
    },
  };
}

export function splitModel(text: string): ModelLines {
  const lines = text.split(/\r?\n/);
  const leading = lines.length > 1 && lines[0] === '';
  if (leading) lines.shift();
  const trailing = lines.length > 1 && lines[lines.length - 1] === '';
  if (trailing) lines.pop();
  return { lines, leading, trailing };
}

/** Find `oldText` by the loose levels in turn and build the replacement of the one place found. */
export function matchLines(file: FileLines, oldText: string, newText: string): LineMatch {
  const old = splitModel(oldText);
  if (old.lines.every(isBlank)) return { kind: 'none' };
  const replacement = splitModel(newText);
  for (const level of LINE_LEVELS) {
    const found = level === 'block_anchor' ? anchoredAt(file, old) : linesAt(file, old, level);
    if (found.length > 1) return { kind: 'ambiguous', level, lines: found.map((f) => f.at + 1) };
    if (found.length === 0) continue;
    const built = build(file, old, replacement, found[0], level);
    if (built) return { kind: 'applied', level, ...built, line: found[0].at + 1 };
  }
  return { kind: 'none' };
}

interface Found {
  at: number;
  /** Indexes of old_string lines that only resembled the file's (block anchor). */
  differing: Set<number>;
}

/** `l.trim()` with the spacing inside a line ignored where it does not separate two words. */
export function squeeze(line: string): string {
  return line
    .trim()
    .replace(/\s+/g, ' ')
    .replace(/(?<![\w$]) | (?![\w$])/g, '');
}

const trimEnd = (line: string) => line.trimEnd();
const trim = (line: string) => line.trim();

function keyOf(level: LineLevel): (line: string) => string {
  switch (level) {
    case 'trailing_whitespace':
      return trimEnd;
    case 'indentation':
      return trim;
    case 'whitespace':
    case 'block_anchor':
      return squeeze;
    default: {
      const never: never = level;
      throw new Error(`unknown level ${never}`);
    }
  }
}

/** Whether old_string's first line starts mid-line, after the file line's indentation. */
function startsAtText(old: ModelLines, fileLine: string): boolean {
  const first = old.lines[0];
  return (
    !old.leading &&
    first.trim() !== '' &&
    leadingWhitespace(first) === '' &&
    leadingWhitespace(fileLine) !== ''
  );
}

function windows(file: FileLines, old: ModelLines): { from: number; to: number } {
  // A leading line break needs a line before; a trailing one needs the last line to end with one.
  const from = old.leading ? 1 : 0;
  let to = file.count - old.lines.length;
  if (old.trailing && to >= 0 && file.eols[to + old.lines.length - 1] === '') to--;
  return { from, to };
}

function linesAt(file: FileLines, old: ModelLines, level: LineLevel): Found[] {
  const key = keyOf(level);
  const wanted = old.lines.map(key);
  const fileKeys = file.keys(key);
  const { from, to } = windows(file, old);
  const found: Found[] = [];
  for (let i = from; i <= to; i++) {
    const first = startsAtText(old, file.lines[i]) ? key(file.lines[i].trimStart()) : fileKeys[i];
    if (first !== wanted[0]) continue;
    let same = true;
    for (let j = 1; j < wanted.length && same; j++) same = fileKeys[i + j] === wanted[j];
    if (same) found.push({ at: i, differing: new Set() });
  }
  return found;
}

function anchoredAt(file: FileLines, old: ModelLines): Found[] {
  const m = old.lines.length;
  if (m < ANCHOR_MIN_LINES || isBlank(old.lines[0]) || isBlank(old.lines[m - 1])) return [];
  const wanted = old.lines.map(squeeze);
  const keys = file.keys(squeeze);
  const allowed = Math.max(1, Math.floor(m / ANCHOR_LINES_PER_DIFFERENCE));
  const { from, to } = windows(file, old);
  const found: Found[] = [];
  for (let i = from; i <= to; i++) {
    if (keys[i] !== wanted[0] || keys[i + m - 1] !== wanted[m - 1]) continue;
    const differing = new Set<number>();
    let tooFar = false;
    for (let j = 1; j < m - 1 && !tooFar; j++) {
      if (keys[i + j] === wanted[j]) continue;
      differing.add(j);
      tooFar = differing.size > allowed || similarity(keys[i + j], wanted[j]) < ANCHOR_MIN_SIMILARITY;
    }
    if (differing.size > 0 && !tooFar) found.push({ at: i, differing });
  }
  return found;
}

function build(
  file: FileLines,
  old: ModelLines,
  replacement: ModelLines,
  found: Found,
  level: LineLevel,
): { start: number; end: number; replacement: string } | undefined {
  const m = old.lines.length;
  const k = replacement.lines.length;
  const region = file.lines.slice(found.at, found.at + m);
  const partial = startsAtText(old, region[0]);
  // Lines new_string repeats from old_string at either end are context: they keep the file's text.
  let prefix = 0;
  while (prefix < Math.min(m, k) && old.lines[prefix] === replacement.lines[prefix]) prefix++;
  let suffix = 0;
  while (
    suffix < Math.min(m, k) - prefix &&
    old.lines[m - 1 - suffix] === replacement.lines[k - 1 - suffix]
  ) {
    suffix++;
  }
  const middle = replacement.lines.slice(prefix, k - suffix);
  const verbatimFirst = partial && prefix === 0;
  const reindent = middle.filter((l, j) => !isBlank(l) && !(verbatimFirst && j === 0));
  let indents = reindent.map(leadingWhitespace);
  if (level !== 'trailing_whitespace') {
    const pairs: Array<[string, string]> = [];
    for (let j = partial ? 1 : 0; j < m; j++) {
      if (isBlank(old.lines[j]) || found.differing.has(j)) continue;
      pairs.push([leadingWhitespace(old.lines[j]), leadingWhitespace(region[j])]);
    }
    const unitOf = [...old.lines.slice(partial ? 1 : 0), ...replacement.lines];
    const mapped = mapIndentation(pairs, indents, { model: detectIndentUnit(unitOf), file: file.unit() });
    if (!mapped) return undefined;
    indents = mapped;
  }
  // Trailing whitespace old_string had and the file has not was a slip: drop it from new lines too.
  const extraTrailing = old.lines.some(
    (l, j) => trailingOf(l).length > trailingOf(region[j]).length && !isBlank(l),
  );
  const blankKeepsSpaces = old.lines.some((l, j) => isBlank(l) && region[j] !== '' && isBlank(region[j]));
  const out: string[] = region.slice(0, prefix);
  if (partial && prefix > 0) out[0] = out[0].trimStart();
  let next = 0;
  for (const [j, line] of middle.entries()) {
    if (isBlank(line)) {
      out.push(blankKeepsSpaces ? line : '');
      continue;
    }
    let text = verbatimFirst && j === 0 ? line : indents[next++] + line.trimStart();
    if (extraTrailing) text = text.trimEnd();
    out.push(text);
  }
  out.push(...region.slice(m - suffix));
  const last = found.at + m - 1;
  const start = old.leading
    ? file.ends[found.at - 1]
    : file.starts[found.at] + (partial ? leadingWhitespace(region[0]).length : 0);
  const end = file.ends[last] + (old.trailing ? file.eols[last].length : 0);
  const eol = file.eols[found.at] || file.eol;
  return {
    start,
    end,
    replacement: `${replacement.leading ? eol : ''}${out.join(eol)}${replacement.trailing ? eol : ''}`,
  };
}

function trailingOf(line: string): string {
  return line.slice(line.trimEnd().length);
}

export function isBlank(line: string): boolean {
  return line.trim() === '';
}

/** Dice coefficient of the two strings' character bigrams: 1 for equal strings, 0 for nothing shared. */
export function similarity(a: string, b: string): number {
  if (a === b) return 1;
  return dice(bigrams(a), bigrams(b));
}

/** A string's character bigrams as sorted numbers, for a Dice coefficient without maps. */
export type Bigrams = Int32Array;

export function bigrams(text: string): Bigrams {
  const out = new Int32Array(Math.max(text.length - 1, 0));
  for (let i = 0; i < out.length; i++) out[i] = (text.charCodeAt(i) << 16) | text.charCodeAt(i + 1);
  return out.sort();
}

export function dice(a: Bigrams, b: Bigrams): number {
  if (a.length === 0 || b.length === 0) return 0;
  let shared = 0;
  let i = 0;
  let j = 0;
  while (i < a.length && j < b.length) {
    if (a[i] === b[j]) {
      shared++;
      i++;
      j++;
    } else if (a[i] < b[j]) i++;
    else j++;
  }
  return (2 * shared) / (a.length + b.length);
}
