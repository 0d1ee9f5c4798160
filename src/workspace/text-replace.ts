/**
 * Exact string replacement for `edit` and `multiedit`, with errors that tell the model how to fix
 * its input: where a near match is (indentation or line numbers copied from `view`), or which
 * lines an ambiguous match occurs on.
 * @module
 */
import { SvcError } from '../errors';

export interface ReplaceResult {
  content: string;
  replacements: number;
}

const MAX_LISTED = 10;

/**
 * Replace `oldString` by `newString` in `content`. `field` prefixes errors (`edits[2]`).
 * A CRLF file edited with LF strings is matched and written with CRLF.
 */
export function replaceExact(
  content: string,
  oldString: string,
  newString: string,
  options: { replaceAll: boolean; path: string; field?: string },
): ReplaceResult {
  const prefix = options.field ? `${options.field}: ` : '';
  if (oldString === newString) {
    throw new SvcError(
      'invalid_input',
      `${prefix}old_string and new_string are identical; nothing would change`,
    );
  }
  let search = oldString;
  let replacement = newString;
  if (content.includes('\r\n') && !oldString.includes('\r\n') && oldString.includes('\n')) {
    search = oldString.replace(/\n/g, '\r\n');
    replacement = newString.replace(/\r?\n/g, '\r\n');
  }
  const positions = occurrences(content, search);
  if (positions.length === 0) {
    throw new SvcError('invalid_input', `${prefix}${notFoundMessage(content, oldString, options.path)}`, {
      details: { path: options.path, reason: 'old_string_not_found' },
    });
  }
  if (positions.length > 1 && !options.replaceAll) {
    const lines = positions.slice(0, MAX_LISTED).map((p) => lineOf(content, p));
    const more = positions.length > MAX_LISTED ? ` and ${positions.length - MAX_LISTED} more` : '';
    throw new SvcError(
      'invalid_input',
      `${prefix}old_string matches ${positions.length} places in ${options.path} (lines ${lines.join(', ')}${more}); include more surrounding lines so it matches exactly one, or set replace_all: true to change every one`,
      { details: { path: options.path, reason: 'old_string_ambiguous', lines } },
    );
  }
  if (options.replaceAll) {
    return { content: content.split(search).join(replacement), replacements: positions.length };
  }
  const at = positions[0];
  return {
    content: content.slice(0, at) + replacement + content.slice(at + search.length),
    replacements: 1,
  };
}

function occurrences(content: string, search: string): number[] {
  const found: number[] = [];
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

const VIEW_PREFIX = /^\s*\d+\t/;

function notFoundMessage(content: string, oldString: string, path: string): string {
  const base = `old_string was not found in ${path}`;
  const wanted = oldString.replace(/\r\n/g, '\n').split('\n');
  if (wanted.filter((l) => l.trim()).every((l) => VIEW_PREFIX.test(l))) {
    return `${base}. It starts its lines with line numbers as view prints them (e.g. "${wanted[0].match(VIEW_PREFIX)?.[0].replace('\t', '\\t')}"); copy the text after the tab only`;
  }
  const lines = content.replace(/\r\n/g, '\n').split('\n');
  const trimmedWanted = trimEdges(wanted.map((l) => l.trim()));
  if (trimmedWanted.length > 0) {
    const trimmedLines = lines.map((l) => l.trim());
    for (let i = 0; i + trimmedWanted.length <= trimmedLines.length; i++) {
      if (trimmedWanted.every((w, j) => trimmedLines[i + j] === w)) {
        const actual = lines.slice(i, i + trimmedWanted.length).join('\n');
        return `${base}, but lines ${i + 1}–${i + trimmedWanted.length} match when indentation and trailing spaces are ignored. The exact text there is:\n${actual}\nUse that text (same whitespace) as old_string`;
      }
    }
    const first = trimmedWanted[0];
    const hits = trimmedLines.flatMap((l, i) => (l === first ? [i + 1] : []));
    if (hits.length > 0) {
      return `${base}. Its first line occurs at line ${hits.slice(0, MAX_LISTED).join(', ')}, but the lines after it differ from the file; view the file around there and copy the current text exactly`;
    }
  }
  return `${base}. The file may have changed or the text was retyped inexactly; view the file again and copy old_string exactly (whitespace included)`;
}

function trimEdges(lines: string[]): string[] {
  let start = 0;
  let end = lines.length;
  while (start < end && lines[start] === '') start++;
  while (end > start && lines[end - 1] === '') end--;
  return lines.slice(start, end);
}
