/**
 * Parsing the two patch formats `edit` accepts in apply_patch mode into one model:
 *
 * - the Codex envelope (`*** Begin Patch` … `*** End Patch`) with `*** Add File:`,
 *   `*** Update File:` (optionally `*** Move to:`, then `@@ [context]` hunks and
 *   `*** End of File`) and `*** Delete File:` sections;
 * - standard unified diffs (`diff --git` headers optional, `--- a/x` / `+++ b/x`, `/dev/null` for
 *   created and deleted files, `rename from/to`, `@@ -l,c +l,c @@` hunks, `\ No newline`).
 *
 * Parsing is lenient where models are sloppy (CRLF, a heredoc or code-fence wrapper, blank lines
 * for empty context lines, miscounted unified hunk headers) and strict where a guess would change
 * the wrong thing: every error names the line of the patch and what was expected there.
 * @module
 */
import { SvcError } from '../errors';

export type PatchFormat = 'codex' | 'unified';

export interface HunkLine {
  op: ' ' | '-' | '+';
  text: string;
}

export interface Hunk {
  /** 1-based position among the file's hunks (for error messages). */
  index: number;
  /** The header as written (`@@ def greet():`, `@@ -3,4 +3,5 @@`). */
  header: string;
  /** Codex `@@ <context>`: a line to find first; the hunk applies after it. */
  context?: string;
  /** Unified `@@ -l,c`: the 1-based line the old side starts at (0 for an empty old side). */
  oldStart?: number;
  lines: HunkLine[];
  /** Codex `*** End of File`: the hunk's old lines end the file. */
  endOfFile: boolean;
  /** Unified `\ No newline at end of file` after the last new-side line. */
  newNoNewline?: boolean;
}

export type FilePatch =
  | { kind: 'add'; path: string; content: string; line: number }
  | { kind: 'delete'; path: string; line: number }
  | { kind: 'update'; path: string; moveTo?: string; hunks: Hunk[]; line: number };

export interface ParsedPatch {
  format: PatchFormat;
  files: FilePatch[];
}

const BEGIN = '*** Begin Patch';
const END = '*** End Patch';
const ADD = '*** Add File: ';
const DELETE = '*** Delete File: ';
const UPDATE = '*** Update File: ';
const MOVE = '*** Move to: ';
const EOF_MARK = '*** End of File';
const UNIFIED_HUNK = /^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@(.*)$/;

/** Which format a patch text is in, or undefined when it is neither. */
export function detectFormat(text: string): PatchFormat | undefined {
  const lines = normalize(text);
  if (lines.some((l) => l.trim() === BEGIN)) return 'codex';
  if (lines.some((l) => l.startsWith('diff --git ')) || hasUnifiedHeaders(lines)) return 'unified';
  if (lines.some((l) => UNIFIED_HUNK.test(l))) return 'unified';
  return undefined;
}

/**
 * Parse a patch. `fallbackPath` is the file a bare unified diff (only `@@` hunks, no `---`/`+++`
 * headers) applies to.
 */
export function parsePatch(text: string, fallbackPath?: string): ParsedPatch {
  const format = detectFormat(text);
  if (!format) {
    throw new SvcError(
      'invalid_input',
      'patch: not a patch this tool reads; give a Codex patch (*** Begin Patch, *** Update File: <path>, @@ hunks, *** End Patch) or a unified diff (--- a/<path>, +++ b/<path>, @@ -l,c +l,c @@ hunks)',
      { details: { reason: 'unknown_format' } },
    );
  }
  const files =
    format === 'codex' ? parseCodex(normalize(text)) : parseUnified(normalize(text), fallbackPath);
  if (files.length === 0) {
    throw new SvcError('invalid_input', 'patch: it changes no file; add at least one file section', {
      details: { reason: 'empty_patch', format },
    });
  }
  return { format, files };
}

/** Lines without CR, without a heredoc (`apply_patch <<'EOF'` … `EOF`) or code-fence wrapper. */
function normalize(text: string): string[] {
  let lines = text.replace(/\r\n/g, '\n').split('\n');
  while (lines.length && lines[lines.length - 1].trim() === '') lines.pop();
  while (lines.length && lines[0].trim() === '') lines.shift();
  const heredoc = lines[0]?.match(/^(?:apply_patch|applypatch)?\s*<<-?\s*['"]?(\w+)['"]?\s*$/);
  if (heredoc && lines[lines.length - 1]?.trim() === heredoc[1]) lines = lines.slice(1, -1);
  if (lines[0]?.startsWith('```') && lines[lines.length - 1]?.trim() === '```') lines = lines.slice(1, -1);
  return lines;
}

function hasUnifiedHeaders(lines: string[]): boolean {
  return lines.some((l, i) => l.startsWith('--- ') && lines[i + 1]?.startsWith('+++ '));
}

function fail(line: number, message: string, reason = 'parse_error'): never {
  throw new SvcError('invalid_input', `patch line ${line}: ${message}`, { details: { line, reason } });
}

function pathOf(raw: string, line: number, what: string): string {
  const path = raw.trim();
  if (!path) fail(line, `${what} needs a file path after the colon`);
  return path;
}

function parseCodex(lines: string[]): FilePatch[] {
  const begin = lines.findIndex((l) => l.trim() === BEGIN);
  if (begin !== 0) {
    fail(
      begin + 1,
      `text before "${BEGIN}"; the patch must start with it (line 1 is "${clip(lines[0] ?? '')}")`,
    );
  }
  const end = lines.findIndex((l, i) => i > begin && l.trim() === END);
  if (end === -1) {
    fail(lines.length, `no "${END}" line; the patch may be cut off. End it with "${END}"`, 'truncated');
  }
  if (end !== lines.length - 1) {
    fail(end + 2, `text after "${END}"; put every file section before it`);
  }
  const files: FilePatch[] = [];
  let i = begin + 1;
  const isHeader = (l: string) =>
    l.startsWith(ADD) || l.startsWith(DELETE) || l.startsWith(UPDATE) || l.trim() === END;
  while (i < end) {
    const line = lines[i];
    const number = i + 1;
    if (line.startsWith(ADD)) {
      const path = pathOf(line.slice(ADD.length), number, 'Add File');
      const content: string[] = [];
      i++;
      while (i < end && !isHeader(lines[i])) {
        if (!lines[i].startsWith('+')) {
          fail(
            i + 1,
            `in Add File ${path}, every line of the new file starts with "+" (found "${clip(lines[i])}")`,
          );
        }
        content.push(lines[i].slice(1));
        i++;
      }
      files.push({
        kind: 'add',
        path,
        content: content.length ? `${content.join('\n')}\n` : '',
        line: number,
      });
    } else if (line.startsWith(DELETE)) {
      files.push({
        kind: 'delete',
        path: pathOf(line.slice(DELETE.length), number, 'Delete File'),
        line: number,
      });
      i++;
      while (i < end && lines[i].trim() === '') i++;
      if (i < end && !isHeader(lines[i])) {
        fail(i + 1, `Delete File takes no lines after it (found "${clip(lines[i])}")`);
      }
    } else if (line.startsWith(UPDATE)) {
      const path = pathOf(line.slice(UPDATE.length), number, 'Update File');
      i++;
      let moveTo: string | undefined;
      if (i < end && lines[i].startsWith(MOVE)) {
        moveTo = pathOf(lines[i].slice(MOVE.length), i + 1, 'Move to');
        i++;
      }
      const hunks: Hunk[] = [];
      let current: Hunk | undefined;
      while (i < end && !isHeader(lines[i])) {
        const text = lines[i];
        if (text.startsWith('@@')) {
          current = codexHunk(text, hunks.length + 1);
          hunks.push(current);
        } else if (text.trim() === EOF_MARK) {
          if (!current) fail(i + 1, `"${EOF_MARK}" before any hunk line in Update File ${path}`);
          current.endOfFile = true;
        } else if (text === '' || text[0] === ' ' || text[0] === '-' || text[0] === '+') {
          if (!current) {
            // spec of the format: the first hunk of a file may leave out its @@ line.
            current = { index: 1, header: '@@', lines: [], endOfFile: false };
            hunks.push(current);
          }
          if (current.endOfFile) {
            fail(i + 1, `a hunk line after "${EOF_MARK}" in Update File ${path}; start a new hunk with @@`);
          }
          current.lines.push({ op: (text[0] ?? ' ') as HunkLine['op'], text: text.slice(1) });
        } else {
          fail(
            i + 1,
            `unexpected line in Update File ${path}${current ? `, hunk ${current.index}` : ''}: "${clip(text)}". Hunk lines start with a space (context), "-" (remove) or "+" (add); a new hunk starts with @@`,
          );
        }
        i++;
      }
      const empty = hunks.find((h) => h.lines.length === 0);
      if (empty) fail(number, `Update File ${path}: hunk ${empty.index} (${empty.header}) has no lines`);
      if (hunks.length === 0 && !moveTo) {
        fail(
          number,
          `Update File ${path} has no hunks; add @@ hunks with the lines to change, or a *** Move to: line`,
        );
      }
      files.push({ kind: 'update', path, moveTo, hunks, line: number });
    } else if (line.trim() === '') {
      i++;
    } else if (line.startsWith(MOVE)) {
      fail(number, `"*** Move to:" must come right after its "*** Update File:" line`);
    } else {
      fail(
        number,
        `"${clip(line)}" is not a file section header; expected "*** Add File: <path>", "*** Update File: <path>", "*** Delete File: <path>" or "${END}"`,
      );
    }
  }
  return files;
}

function codexHunk(text: string, index: number): Hunk {
  const unified = text.match(UNIFIED_HUNK);
  if (unified) {
    // A unified header inside a Codex patch: use its line number as the position hint.
    return { index, header: text, oldStart: Number(unified[1]), lines: [], endOfFile: false };
  }
  const context = text.slice(2).trim();
  return { index, header: text, ...(context ? { context } : {}), lines: [], endOfFile: false };
}

interface UnifiedFile {
  oldPath?: string | null;
  newPath?: string | null;
  renameFrom?: string;
  renameTo?: string;
  created: boolean;
  deleted: boolean;
  /** The `---`/`+++` pair was read. */
  headers: boolean;
  /** Started by a `diff --git` line (extended headers may follow). */
  git: boolean;
  hunks: Hunk[];
  line: number;
}

function parseUnified(lines: string[], fallbackPath?: string): FilePatch[] {
  const files: UnifiedFile[] = [];
  let current: UnifiedFile | undefined;
  const start = (line: number, git = false): UnifiedFile => {
    current = { created: false, deleted: false, headers: false, git, hunks: [], line };
    files.push(current);
    return current;
  };
  let i = 0;
  while (i < lines.length) {
    const line = lines[i];
    const number = i + 1;
    if (line.startsWith('diff --git ')) {
      const file = start(number, true);
      const names = line.slice('diff --git '.length).match(/^"?a\/(.+?)"? "?b\/(.+?)"?$/);
      if (names) {
        file.oldPath = names[1];
        file.newPath = names[2];
      }
      i++;
      continue;
    }
    if (isFileHeader(lines, i)) {
      const file = current?.git && !current.headers && current.hunks.length === 0 ? current : start(number);
      file.headers = true;
      file.oldPath = headerPath(line.slice(4));
      file.newPath = headerPath(lines[i + 1].slice(4));
      if (file.oldPath === null) file.created = true;
      if (file.newPath === null) file.deleted = true;
      i += 2;
      continue;
    }
    const hunk = line.match(UNIFIED_HUNK);
    if (hunk) {
      if (!current) {
        if (!fallbackPath) {
          fail(
            number,
            'a hunk without file headers; add "--- a/<path>" and "+++ b/<path>" lines before it, or pass path',
            'missing_file_header',
          );
        }
        current = start(number);
        current.oldPath = fallbackPath;
        current.newPath = fallbackPath;
      }
      const parsed = readUnifiedHunk(lines, i, current.hunks.length + 1, hunk);
      current.hunks.push(parsed.hunk);
      i = parsed.next;
      continue;
    }
    if (line.startsWith('Binary files ') || line.startsWith('GIT binary patch')) {
      fail(number, 'binary patches are not supported; change binary files with bash or write', 'binary');
    }
    if (current?.git && current.hunks.length === 0) {
      // Extended git headers between `diff --git` and the hunks.
      if (line.startsWith('new file mode')) current.created = true;
      else if (line.startsWith('deleted file mode')) current.deleted = true;
      else if (line.startsWith('rename from ')) current.renameFrom = line.slice('rename from '.length).trim();
      else if (line.startsWith('rename to ')) current.renameTo = line.slice('rename to '.length).trim();
    }
    // Anything else between files (commit messages, `index` lines, prose) is not ours to read.
    i++;
  }
  return files.map(toFilePatch);
}

/** A `--- <path>` line followed by a `+++ <path>` line. */
function isFileHeader(lines: string[], i: number): boolean {
  return lines[i].startsWith('--- ') && (lines[i + 1]?.startsWith('+++ ') ?? false);
}

function readUnifiedHunk(
  lines: string[],
  at: number,
  index: number,
  header: RegExpMatchArray,
): { hunk: Hunk; next: number } {
  const oldStart = Number(header[1]);
  const oldCount = header[2] === undefined ? 1 : Number(header[2]);
  const newCount = header[4] === undefined ? 1 : Number(header[4]);
  const hunk: Hunk = { index, header: lines[at], oldStart, lines: [], endOfFile: false };
  let oldSeen = 0;
  let newSeen = 0;
  let i = at + 1;
  for (; i < lines.length; i++) {
    const text = lines[i];
    const complete = oldSeen >= oldCount && newSeen >= newCount;
    if (text.startsWith('\\')) {
      // `\ No newline at end of file` applies to the line before it.
      const previous = hunk.lines[hunk.lines.length - 1];
      if (previous && previous.op !== '-') hunk.newNoNewline = true;
      continue;
    }
    if (UNIFIED_HUNK.test(text) || text.startsWith('diff --git ')) break;
    // A removed "-- x" line followed by an added "++ y" line looks like file headers: trust the
    // counts, unless the pair reads like real headers (a/, b/, /dev/null).
    if (isFileHeader(lines, i) && (complete || /^--- (a\/|\/dev\/null)/.test(text))) break;
    // Models miscount: past the counts, only more +/- lines (never a blank) still belong here.
    if (complete && !(text.startsWith('+') || text.startsWith('-'))) break;
    if (text === '' || text[0] === ' ') {
      hunk.lines.push({ op: ' ', text: text.slice(1) });
      oldSeen++;
      newSeen++;
    } else if (text[0] === '-') {
      hunk.lines.push({ op: '-', text: text.slice(1) });
      oldSeen++;
    } else if (text[0] === '+') {
      hunk.lines.push({ op: '+', text: text.slice(1) });
      newSeen++;
    } else {
      fail(
        i + 1,
        `unexpected line in hunk ${index} (${lines[at]}): "${clip(text)}". Hunk lines start with a space, "-" or "+"`,
      );
    }
  }
  if (hunk.lines.length === 0) fail(at + 1, `hunk ${index} (${lines[at]}) has no lines`);
  return { hunk, next: i };
}

/** `a/src/x.ts`, `b/src/x.ts\t2024-01-01…`, `/dev/null` → the path, or null for /dev/null. */
function headerPath(raw: string): string | null {
  let path = raw.split('\t')[0].trim();
  if (path.startsWith('"') && path.endsWith('"')) path = path.slice(1, -1);
  if (path === '/dev/null') return null;
  if (/^[ab]\//.test(path)) path = path.slice(2);
  return path;
}

function toFilePatch(file: UnifiedFile): FilePatch {
  const oldPath = file.renameFrom ?? file.oldPath;
  const newPath = file.renameTo ?? file.newPath;
  const line = file.line + 1;
  if (file.created || oldPath === null) {
    const path = newPath;
    if (!path) fail(line, 'a created file needs its path in the "+++ b/<path>" line');
    const removed = file.hunks.flatMap((h) => h.lines).filter((l) => l.op !== '+');
    if (removed.length > 0) {
      fail(
        line,
        `${path} is created (--- /dev/null), so its hunks may only add lines (found "${clip(removed[0].text)}")`,
      );
    }
    const added = file.hunks.flatMap((h) => h.lines).map((l) => l.text);
    const noNewline = file.hunks[file.hunks.length - 1]?.newNoNewline === true;
    const content = added.length ? `${added.join('\n')}${noNewline ? '' : '\n'}` : '';
    return { kind: 'add', path, content, line };
  }
  if (!oldPath) fail(line, 'a file section without a path; add "--- a/<path>" and "+++ b/<path>" lines');
  if (file.deleted || newPath === null) return { kind: 'delete', path: oldPath, line };
  const moveTo = newPath && newPath !== oldPath ? newPath : undefined;
  if (file.hunks.length === 0 && !moveTo) {
    fail(line, `the section for ${oldPath} has no @@ hunks`);
  }
  return { kind: 'update', path: oldPath, ...(moveTo ? { moveTo } : {}), hunks: file.hunks, line };
}

function clip(text: string, max = 80): string {
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}
