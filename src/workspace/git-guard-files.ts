/**
 * The files of a workspace's repository svc checks before its own git call (git-guard.ts): that
 * git will not read another repository's objects through `objects/info/alternates`, and will not
 * stop in `open` on a file that is not a regular one. A command the agent runs may write both (they
 * are in the workspace's `.git`), and svc runs git outside the sandbox.
 * @module
 */
import { realpathSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { readRegularFile } from './file-io';

/** The directory a path leads to through its symlinks, itself when it does not exist. */
export function realOrSelf(path: string): string {
  try {
    return realpathSync(path);
  } catch {
    return resolve(path);
  }
}

/**
 * The first `max` bytes of a regular file, '' when it is missing or not a regular file. Opened
 * without waiting (`readRegularFile`), so a FIFO swapped in after a check cannot stop svc's process
 * in `open`.
 */
export function readSmall(path: string, max = 4096): string {
  try {
    return readRegularFile(path, max).toString('utf8');
  } catch {
    return '';
  }
}

/** Files git opens besides `.git`'s own (found by trying: each as a FIFO held `git status` or `log`). */
export const REPO_FILES: readonly string[] = [
  'index',
  'HEAD',
  'config',
  'packed-refs',
  'commondir',
  'shallow',
  'info/exclude',
  'info/attributes',
  'info/grafts',
  'info/sparse-checkout',
  'objects/info/alternates',
];

/** The work tree's files git opens on most calls (`log` reads `.mailmap`). */
export const TOP_FILES: readonly string[] = ['.gitignore', '.gitattributes', '.mailmap'];

/** `path` when it exists and is not a regular file (a FIFO, a directory, a device). */
export function notRegular(path: string): boolean {
  const stat = statSync(path, { throwIfNoEntry: false });
  return stat !== undefined && !stat.isFile();
}

/**
 * The largest ignore or attributes file svc's git may read: git reads each whole into memory (a
 * sparse 2 GB top `.gitignore` took `git status` to 2 GB, a 10 GB one past 600 MB before it
 * failed; found by probing). Git 2.40 and later skip such a file themselves from 100 MiB
 * (`PATTERN_MAX_FILE_SIZE`, `ATTR_MAX_FILE_SIZE`), no repository needs one that large.
 */
export const MAX_PATTERN_FILE_BYTES = 100 * 1024 * 1024;

/** The ignore and attributes files svc checks the size of: in `.git`, and at the work tree's top. */
export const PATTERN_FILES = {
  repo: ['info/exclude', 'info/attributes'],
  top: ['.gitignore', '.gitattributes'],
};

/** Why git should not read `path` (an ignore or attributes file): its size past the limit, or undefined. */
export function oversizedPatternFile(path: string): string | undefined {
  const size = statSync(path, { throwIfNoEntry: false })?.size ?? 0;
  if (size < MAX_PATTERN_FILE_BYTES) return undefined;
  return `${path} is ${Math.round(size / (1024 * 1024))} MiB, over the ${MAX_PATTERN_FILE_BYTES / (1024 * 1024)} MiB an ignore or attributes file may have (git reads it whole into memory); svc runs no git there until it is shrunk or removed`;
}

/** Git's own limit on alternates of alternates (object-file.c): past it git stops reading them. */
const MAX_ALTERNATE_DEPTH = 5;
/** An alternates file longer than any repository writes: the mark of one made to hide a line. */
const MAX_ALTERNATES_BYTES = 64 * 1024;

/**
 * Why git's object directory `objects` (and those its `info/alternates` name, as git follows them)
 * may not be used, or undefined. Every one must lie `inside` the workspace's repository: an
 * alternate outside made svc's git read another repository's objects into checkpoints and diffs
 * (found by probing). `objects/info/http-alternates` is read only by the dumb HTTP transport, and
 * svc's git starts no transport (git-guard.ts).
 */
export function alternatesProblem(objects: string, inside: (path: string) => boolean): string | undefined {
  let level = [objects];
  const seen = new Set<string>();
  for (let depth = 0; depth <= MAX_ALTERNATE_DEPTH + 1 && level.length > 0; depth++) {
    const next: string[] = [];
    for (const dir of level) {
      const real = realOrSelf(dir);
      if (seen.has(real)) continue;
      seen.add(real);
      if (!inside(real))
        return `${depth === 0 ? dir : `an alternate object directory, ${dir},`} leads to ${real}, outside the workspace's repository; svc's git would read another repository's objects`;
      const file = join(dir, 'info', 'alternates');
      if (notRegular(file)) return `${file} is not a regular file`;
      const text = readSmall(file, MAX_ALTERNATES_BYTES + 1);
      if (text.length > MAX_ALTERNATES_BYTES) return `${file} is longer than ${MAX_ALTERNATES_BYTES} bytes`;
      for (const entry of alternateEntries(text)) {
        if (entry === undefined) return `${file} holds a quoted path svc cannot read`;
        // Relative to the object directory naming it, as git resolves it.
        next.push(resolve(dir, entry));
      }
    }
    level = next;
  }
  return undefined;
}

/** The paths an alternates file names (git's `parse_alt_odb_entry`); undefined for a quoted one svc cannot read. */
function alternateEntries(text: string): (string | undefined)[] {
  const entries: (string | undefined)[] = [];
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    entries.push(line.startsWith('"') ? unquoteC(line) : line);
  }
  return entries;
}

const C_ESCAPES: Record<string, number> = { a: 7, b: 8, f: 12, n: 10, r: 13, t: 9, v: 11, '"': 34, '\\': 92 };

/** Git's C-style quoting (`"a\"b\303\251"`) undone; undefined when it is not well formed. */
function unquoteC(quoted: string): string | undefined {
  const bytes: number[] = [];
  for (let i = 1; i < quoted.length; i++) {
    const ch = quoted[i];
    if (ch === '"') return Buffer.from(bytes).toString('utf8');
    if (ch !== '\\') {
      bytes.push(...Buffer.from(ch, 'utf8'));
      continue;
    }
    const esc = quoted[++i];
    const octal = /^[0-3][0-7]{2}/.exec(quoted.slice(i, i + 3))?.[0];
    if (octal) {
      bytes.push(Number.parseInt(octal, 8));
      i += 2;
    } else if (esc !== undefined && esc in C_ESCAPES) bytes.push(C_ESCAPES[esc]);
    else return undefined;
  }
  return undefined;
}
