/**
 * String replacement for `edit` and `multiedit`: a cascade that tries old_string exactly, then
 * with its line endings converted to the file's, then by whole lines with trailing whitespace,
 * indentation and inner spacing ignored in turn, then as an anchored block
 * (src/workspace/edit-match.ts); when old_string carries the line numbers `view` prints, the
 * cascade runs again without them. Each loose level applies only when it finds exactly one place,
 * and the result says which level matched. A miss names the closest region and what differs
 * (src/workspace/edit-miss.ts); an ambiguous match names the lines of every place.
 * @module
 */
import { SvcError } from '../errors';
import { type LineLevel, matchLines, splitFile } from './edit-match';
import { clip, describeMiss } from './edit-miss';

/** How old_string was found: exactly, or by which loose level. */
export type MatchKind = 'exact' | 'line_endings' | LineLevel | 'line_numbers';

export interface ReplaceResult {
  content: string;
  replacements: number;
  match: MatchKind;
  /** 1-based line where the (first) replaced text starts. */
  line: number;
}

interface ReplaceOptions {
  replaceAll: boolean;
  path: string;
  /** Prefixes errors (`edits[2]`). */
  field?: string;
}

type Attempt =
  | { kind: 'applied'; result: ReplaceResult }
  | { kind: 'ambiguous'; lines: number[]; match: MatchKind }
  | { kind: 'none' };

const MAX_LISTED = 10;

const LEVEL_PHRASE: Record<MatchKind, string> = {
  exact: 'exactly',
  line_endings: 'with its line endings converted',
  trailing_whitespace: 'ignoring trailing whitespace',
  indentation: 'ignoring indentation',
  whitespace: 'ignoring spacing',
  block_anchor: 'as a block with the same first and last lines',
  line_numbers: 'without its view line numbers',
};

/**
 * Replace `oldString` by `newString` in `content`. A CRLF file edited with LF strings (or the
 * reverse) is matched and written with the file's line endings.
 */
export function replaceText(
  content: string,
  oldString: string,
  newString: string,
  options: ReplaceOptions,
): ReplaceResult {
  const prefix = options.field ? `${options.field}: ` : '';
  if (oldString === newString) {
    throw new SvcError(
      'invalid_input',
      `${prefix}old_string and new_string are identical; nothing would change`,
    );
  }
  const numbered = stripViewNumbers(oldString);
  // Text with view's line numbers is tried as sent only exactly: the file may hold such lines.
  const first =
    numbered === undefined
      ? attempt(content, oldString, newString, options.replaceAll)
      : replaceAt(content, oldString, newString, options.replaceAll, 'exact');
  if (first.kind === 'applied') return first.result;
  if (first.kind === 'ambiguous') throw ambiguous(content, first, options, prefix);
  if (numbered !== undefined) {
    const replacement = stripViewNumbers(newString, false) ?? newString;
    const second = attempt(content, numbered, replacement, options.replaceAll);
    if (second.kind === 'applied') return { ...second.result, match: 'line_numbers' };
    if (second.kind === 'ambiguous') {
      throw ambiguous(content, { ...second, match: 'line_numbers' }, options, prefix);
    }
  }
  const note =
    numbered === undefined
      ? ''
      : ', even with the line numbers view prints (e.g. "     1\\t") taken off its lines; copy the text after the tab only';
  const base = `${prefix}old_string was not found in ${options.path}`;
  const miss = describeMiss(splitFile(content), numbered ?? oldString, base, note);
  const all = options.replaceAll
    ? '. With replace_all, old_string must match exactly (line endings aside)'
    : '';
  return throwMiss(`${miss.message}${all}`, options.path, miss.closest);
}

function throwMiss(message: string, path: string, closest: unknown): never {
  throw new SvcError('invalid_input', message, {
    details: { path, reason: 'old_string_not_found', ...(closest ? { closest } : {}) },
  });
}

function attempt(content: string, oldString: string, newString: string, replaceAll: boolean): Attempt {
  const exact = replaceAt(content, oldString, newString, replaceAll, 'exact');
  if (exact.kind !== 'none') return exact;
  const converted = convertLineEndings(content, oldString, newString);
  if (converted) {
    const result = replaceAt(content, converted.old, converted.replacement, replaceAll, 'line_endings');
    if (result.kind !== 'none') return result;
  }
  // Loose levels replace one place only: replace_all stays exact.
  if (replaceAll) return { kind: 'none' };
  const loose = matchLines(splitFile(content), oldString, newString);
  if (loose.kind === 'ambiguous') return { kind: 'ambiguous', lines: loose.lines, match: loose.level };
  if (loose.kind === 'none') return loose;
  return {
    kind: 'applied',
    result: {
      content: content.slice(0, loose.start) + loose.replacement + content.slice(loose.end),
      replacements: 1,
      match: loose.level,
      line: loose.line,
    },
  };
}

function replaceAt(
  content: string,
  search: string,
  replacement: string,
  replaceAll: boolean,
  match: MatchKind,
): Attempt {
  const positions = occurrences(content, search);
  if (positions.length === 0) return { kind: 'none' };
  const line = lineOf(content, positions[0]);
  if (replaceAll) {
    return {
      kind: 'applied',
      result: {
        content: content.split(search).join(replacement),
        replacements: positions.length,
        match,
        line,
      },
    };
  }
  if (positions.length > 1) {
    return { kind: 'ambiguous', lines: positions.map((p) => lineOf(content, p)), match };
  }
  const at = positions[0];
  return {
    kind: 'applied',
    result: {
      content: content.slice(0, at) + replacement + content.slice(at + search.length),
      replacements: 1,
      match,
      line,
    },
  };
}

/** old_string and new_string with the file's line endings, when theirs differ from it. */
function convertLineEndings(
  content: string,
  oldString: string,
  newString: string,
): { old: string; replacement: string } | undefined {
  const fileCrlf = content.includes('\r\n');
  const oldCrlf = oldString.includes('\r\n');
  if (fileCrlf && !oldCrlf && oldString.includes('\n')) {
    return { old: oldString.replace(/\n/g, '\r\n'), replacement: newString.replace(/\r?\n/g, '\r\n') };
  }
  if (!fileCrlf && oldCrlf) {
    return { old: oldString.replace(/\r\n/g, '\n'), replacement: newString.replace(/\r\n/g, '\n') };
  }
  return undefined;
}

function ambiguous(
  content: string,
  found: { lines: number[]; match: MatchKind },
  options: ReplaceOptions,
  prefix: string,
): SvcError {
  const { lines, match } = found;
  const listed = lines.slice(0, MAX_LISTED);
  const more = lines.length > MAX_LISTED ? ` and ${lines.length - MAX_LISTED} more` : '';
  const above = linesAbove(content, listed);
  const details = { path: options.path, reason: 'old_string_ambiguous', lines, match };
  if (match === 'exact' || match === 'line_endings') {
    return new SvcError(
      'invalid_input',
      `${prefix}old_string matches ${lines.length} places in ${options.path} (lines ${listed.join(', ')}${more}); include more surrounding lines so it matches exactly one, or set replace_all: true to change every one${above}`,
      { details },
    );
  }
  return new SvcError(
    'invalid_input',
    `${prefix}old_string was not found in ${options.path} exactly, and ${LEVEL_PHRASE[match]} it matches ${lines.length} places (lines ${listed.join(', ')}${more}), so nothing was changed. Copy the exact text of the place you mean (whitespace included) with a line or two around it so it matches once${above}`,
    { details },
  );
}

/** '. The lines above them: 3 "…", 9 "…"' when those lines tell the places apart. */
function linesAbove(content: string, lines: number[]): string {
  if (lines.length > 4) return '';
  const all = content.split(/\r?\n/);
  const above = lines.map((line) => {
    let at = line - 2;
    while (at >= 0 && all[at].trim() === '') at--;
    return at >= 0 ? { line: at + 1, text: all[at].trim() } : undefined;
  });
  const texts = above.map((a) => a?.text);
  if (above.some((a) => a === undefined) || new Set(texts).size < texts.length) return '';
  const shown = above.map((a) => `${a?.line} "${clip(a?.text ?? '', 60)}"`).join(', ');
  return `. The lines above them differ (${shown}); one of those makes old_string unique`;
}

/**
 * The text without `view`'s line-number prefixes ("    12\t"), when every line has one (a final
 * line break aside) and, for old_string, they count up one by one.
 */
function stripViewNumbers(text: string, consecutive = true): string | undefined {
  const lines = text.split(/\r?\n/);
  const last = lines.length > 1 && lines[lines.length - 1] === '' ? lines.length - 1 : lines.length;
  const prefix = /^ *(\d+)(?:\t|→)/;
  const numbers: number[] = [];
  for (const line of lines.slice(0, last)) {
    const found = prefix.exec(line);
    if (!found) return undefined;
    numbers.push(Number(found[1]));
  }
  if (consecutive && !numbers.every((n, i) => i === 0 || n === numbers[i - 1] + 1)) return undefined;
  return lines.map((l) => l.replace(prefix, '')).join(text.includes('\r\n') ? '\r\n' : '\n');
}

function occurrences(content: string, search: string): number[] {
  const found: number[] = [];
  if (search === '') return found;
  for (let at = content.indexOf(search); at !== -1; at = content.indexOf(search, at + search.length)) {
    found.push(at);
  }
  return found;
}

function lineOf(content: string, index: number): number {
  let line = 1;
  for (let i = 0; i < index; i++) if (content.charCodeAt(i) === 10) line++;
  return line;
}
