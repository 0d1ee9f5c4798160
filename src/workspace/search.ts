/**
 * Listing and searching the workspace with ripgrep: `ls` (a tree), `glob` (file names, newest
 * first) and `grep` (content). All honor .gitignore (inside or outside a git repository), show
 * hidden files, and skip `.git/`, svc's own data directory and the protected locations, whatever
 * glob is given (./search-visible.ts).
 * @module
 */
import { statSync } from 'node:fs';
import { join } from 'node:path';
import { SvcError } from '../errors';
import type { OpContext } from './context';
import { findFifos } from './fifo-wait';
import type { ResolvedPath } from './paths';
import { runRg } from './ripgrep';
import { checkedRg, fifoError, fifoNote } from './search-errors';
import { type SearchDeps, searchHiding } from './search-visible';

export const SEARCH_LIMITS = {
  lsDefaultDepth: 3,
  lsMaxEntries: 1000,
  globDefault: 100,
  grepDefault: 100,
  maxResults: 2000,
  maxLineChars: 500,
  /** A search that runs longer is stopped and answers with what it found (docs/coding-tools.md). */
  timeLimitMs: 30_000,
  /**
   * The longest pattern or glob, in bytes: ripgrep takes them as arguments, and Linux refuses one
   * over 128 KiB (E2BIG). No pattern anyone writes comes near it.
   */
  maxPatternBytes: 64 * 1024,
} as const;

export interface LsResult {
  path: string;
  /** Indented tree, directories with a trailing slash. */
  tree: string;
  files: number;
  directories: number;
  truncated: boolean;
}

export interface GlobResult {
  pattern: string;
  path: string;
  /** Workspace-relative paths, most recently modified first. */
  files: string[];
  count: number;
  truncated: boolean;
}

export interface GrepMatch {
  path: string;
  line: number;
  text: string;
  /** A context line around a match rather than a match. */
  context?: boolean;
}

export interface GrepInput {
  pattern: string;
  path?: string;
  glob?: string;
  literal?: boolean;
  case_insensitive?: boolean;
  context?: number;
  multiline?: boolean;
  output_mode?: 'content' | 'files' | 'count';
  limit?: number;
}

export interface GrepResult {
  pattern: string;
  path: string;
  output_mode: 'content' | 'files' | 'count';
  matches?: GrepMatch[];
  files?: string[];
  counts?: { path: string; count: number }[];
  /** Matching lines found (content and count modes), files found (files mode). */
  total: number;
  truncated: boolean;
  /** Why the results may be incomplete beyond the limit: the search ran out of time. */
  note?: string;
}

export interface SearchOps {
  ls(
    input: { path?: string; depth?: number; ignore?: string[]; limit?: number },
    ctx: OpContext,
  ): Promise<LsResult>;
  glob(input: { pattern: string; path?: string; limit?: number }, ctx: OpContext): Promise<GlobResult>;
  grep(input: GrepInput, ctx: OpContext): Promise<GrepResult>;
  /** Files under a path (workspace-relative, sorted), optionally filtered by globs. */
  files(
    input: { path?: string; globs?: string[]; limit: number },
    ctx: OpContext,
  ): Promise<{ files: string[]; truncated: boolean; isFile: boolean }>;
}

export interface SearchOpsDeps extends SearchDeps {
  timeLimitMs?: number;
  /** Aborted when the workspace closes: every ripgrep still running is stopped. */
  closed?: AbortSignal;
  /** How often a running ripgrep is looked at for a wait on a FIFO (./fifo-wait.ts); 0: never. */
  fifoCheckMs?: number;
  /** ripgrep's memory cap in bytes, read at each search (options.search.memory_limit_mb); 0: none. */
  memoryLimitBytes?: () => number | undefined;
}

export function createSearchOps(deps: SearchOpsDeps): SearchOps {
  const hiding = () => searchHiding(deps);
  const timeLimitMs = deps.timeLimitMs ?? SEARCH_LIMITS.timeLimitMs;
  const rgOptions = (ctx: OpContext) => ({
    cwd: deps.paths.root,
    signal: anySignal(ctx.signal, deps.closed),
    timeLimitMs,
    fifoCheckMs: deps.fifoCheckMs,
    memoryLimitBytes: deps.memoryLimitBytes?.(),
  });
  /**
   * The FIFOs in the workspace (or the outside directory searched) for a message naming them: the
   * ones where ripgrep reads an ignore file when there are such, else all of them.
   */
  const fifosNear = async (target: ResolvedPath, visible: (path: string) => boolean) => {
    const found = target.inside
      ? await findFifos(deps.paths.root)
      : (await findFifos(target.abs)).map((f) => join(target.abs, f));
    const shown = found.filter(visible);
    const ignoreFiles = shown.filter((f) => IGNORE_FILE.test(f));
    return ignoreFiles.length ? ignoreFiles : shown;
  };

  const searchRoot = (path: string | undefined): { target: ResolvedPath; arg: string } => {
    const target = deps.paths.resolve(path ?? '.');
    let stat: ReturnType<typeof statSync> | undefined;
    try {
      stat = statSync(target.abs);
    } catch {
      throw new SvcError('not_found', `path: ${target.rel} does not exist; check it with ls`);
    }
    if (!stat) throw new SvcError('not_found', `path: ${target.rel} does not exist`);
    refuseSpecial(stat, target);
    return { target, arg: target.inside ? (target.rel === '.' ? '.' : target.rel) : target.abs };
  };

  const listFiles = async (
    flags: string[],
    root: { target: ResolvedPath; arg: string },
    ctx: OpContext,
    maxBytes: number,
  ) => {
    const { args, visible } = hiding();
    // `--` before the path: a workspace file named like a flag is a path, never an option.
    // NUL-separated: a file name may hold a newline (`new\nline.txt` is one file, not two).
    const result = await runRg(['--files', '--null', ...args(flags), '--', root.arg], {
      ...rgOptions(ctx),
      maxBytes,
      recordEnd: 0,
    });
    if (result.fifo) throw fifoError(await fifosNear(root.target, visible));
    checkedRg(result);
    const files = result.stdout.split('\0').filter(Boolean).map(clean).filter(visible);
    return { files, truncated: result.truncated };
  };

  return {
    async files(input, ctx) {
      const root = searchRoot(input.path);
      const { target } = root;
      if (statSync(target.abs).isFile()) return { files: [target.rel], truncated: false, isFile: true };
      const globs = (input.globs ?? []).flatMap((g) => ['--glob', g]);
      const { files, truncated } = await listFiles(globs, root, ctx, 4 * 1024 * 1024);
      files.sort();
      return {
        files: files.slice(0, input.limit),
        truncated: truncated || files.length > input.limit,
        isFile: false,
      };
    },

    async ls(input, ctx) {
      const root = searchRoot(input.path);
      const { target, arg } = root;
      for (const g of input.ignore ?? []) checkPatternSize('ignore', g);
      const depth = input.depth ?? SEARCH_LIMITS.lsDefaultDepth;
      const limit = input.limit ?? SEARCH_LIMITS.lsMaxEntries;
      const globs = (input.ignore ?? []).flatMap((g) => ['--glob', `!${g}`]);
      const { files, truncated: cut } = await listFiles(globs, root, ctx, 4 * 1024 * 1024);
      const prefix = arg === '.' ? '' : `${clean(arg).replace(/\/$/, '')}/`;
      const tree = buildTree(
        files.map((f) => (f.startsWith(prefix) ? f.slice(prefix.length) : f)),
        depth,
        limit,
      );
      return {
        path: target.rel,
        tree: `${target.rel === '.' ? deps.paths.root : target.rel}/\n${tree.text}`,
        files: tree.files,
        directories: tree.directories,
        truncated: tree.truncated || cut,
      };
    },

    async glob(input, ctx) {
      const root = searchRoot(input.path);
      const { target } = root;
      checkPatternSize('pattern', input.pattern);
      const limit = input.limit ?? SEARCH_LIMITS.globDefault;
      // Globs match paths relative to the searched directory: accept `./x` and absolute spellings too.
      let pattern = input.pattern.replace(/^\.\//, '');
      for (const base of [target.abs, deps.paths.root, deps.paths.realRoot]) {
        if (pattern.startsWith(`${base}/`)) pattern = pattern.slice(base.length + 1);
      }
      const { files, truncated: cut } = await listFiles(['--glob', pattern], root, ctx, 4 * 1024 * 1024);
      const base = target.inside ? deps.paths.root : '';
      const withTime = files.map((f) => {
        let mtime = 0;
        try {
          mtime = statSync(base ? join(base, f) : f).mtimeMs;
        } catch {
          // vanished between listing and stat
        }
        return { f, mtime };
      });
      withTime.sort((a, b) => b.mtime - a.mtime || a.f.localeCompare(b.f));
      return {
        pattern: input.pattern,
        path: target.rel,
        files: withTime.slice(0, limit).map((x) => x.f),
        count: files.length,
        truncated: cut || files.length > limit,
      };
    },

    async grep(input, ctx) {
      const { target, arg } = searchRoot(input.path);
      checkPatternSize('pattern', input.pattern);
      if (input.glob) checkPatternSize('glob', input.glob);
      const mode = input.output_mode ?? 'content';
      const limit = input.limit ?? SEARCH_LIMITS.grepDefault;
      const { args: around, visible } = hiding();
      const args = [...around(grepArgs(input, mode)), '--regexp', input.pattern, '--', arg];
      const result = checkedRg(await runRg(args, rgOptions(ctx)));
      const note = result.fifo
        ? fifoNote(await fifosNear(target, visible))
        : result.timedOut
          ? timeNote(timeLimitMs)
          : undefined;
      return {
        pattern: input.pattern,
        path: target.rel,
        output_mode: mode,
        ...grepFound(result.stdout, mode, limit, visible),
        ...(result.truncated && { truncated: true }),
        ...(note && { note }),
      };
    },
  };
}

/** What ripgrep's output in an output mode says was found: `limit` entries of it, visible ones. */
function grepFound(
  stdout: string,
  mode: GrepResult['output_mode'],
  limit: number,
  visible: (path: string) => boolean,
): Pick<GrepResult, 'files' | 'counts' | 'matches' | 'total' | 'truncated'> {
  // Every mode's records are `path NUL rest newline` (files mode as a count of at most 1).
  const records = nulRecords(stdout).filter((r) => visible(r.path));
  if (mode === 'files') {
    const files = records.map((r) => r.path).sort();
    return { files: files.slice(0, limit), total: files.length, truncated: files.length > limit };
  }
  if (mode === 'count') {
    const counts = records
      .map((r) => ({ path: r.path, count: Number(r.rest) }))
      .sort((a, b) => a.path.localeCompare(b.path));
    return {
      counts: counts.slice(0, limit),
      total: counts.reduce((n, c) => n + c.count, 0),
      truncated: counts.length > limit,
    };
  }
  const { kept, total } = contentMatches(records, limit);
  return { matches: kept, total, truncated: total > limit };
}

/** ripgrep's flags for a grep input: matching options, then the output mode's format. */
function grepArgs(input: GrepInput, mode: GrepResult['output_mode']): string[] {
  // `--null`: each path ends in a NUL, so a name holding a newline comes back whole; every mode
  // ends a record in a newline, which `--line-buffered` writes at once (what a stopped search keeps).
  const args = ['--color', 'never', '--no-messages', '--null', '--with-filename'];
  if (input.literal) args.push('--fixed-strings');
  if (input.case_insensitive) args.push('--ignore-case');
  if (input.multiline) args.push('--multiline', '--multiline-dotall');
  if (input.glob) args.push('--glob', input.glob);
  // Files as a count stopped at the first match: `--files-with-matches --null` ends no line.
  if (mode === 'files') args.push('--count', '--max-count', '1');
  else if (mode === 'count') args.push('--count-matches');
  else {
    args.push('--line-number', '--no-heading', '--no-context-separator');
    args.push('--max-columns', String(SEARCH_LIMITS.maxLineChars), '--max-columns-preview');
    if (input.context) args.push('--context', String(input.context));
  }
  return args;
}

/** Content-mode output (path NUL line sep text) as matches in path and line order, `limit` kept. */
function contentMatches(records: readonly RgRecord[], limit: number): { kept: GrepMatch[]; total: number } {
  const matches: GrepMatch[] = [];
  let total = 0;
  for (const { path, rest } of records) {
    const sepAt = rest.search(/[:-]/);
    if (sepAt < 0) continue;
    const isMatch = rest[sepAt] === ':';
    if (isMatch) total++;
    const match: GrepMatch = { path, line: Number(rest.slice(0, sepAt)), text: rest.slice(sepAt + 1) };
    if (!isMatch) match.context = true;
    matches.push(match);
  }
  matches.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : a.line - b.line));
  // Keep `limit` matches (with their context lines).
  const kept: GrepMatch[] = [];
  let seen = 0;
  for (const m of matches) {
    if (!m.context) {
      if (seen === limit) break;
      seen++;
    } else if (seen === limit) break;
    kept.push(m);
  }
  return { kept, total };
}

interface RgRecord {
  /** As `clean` makes it. */
  path: string;
  /** What follows the path's NUL up to the newline: `12:text`, `12-text` (context) or a count. */
  rest: string;
}

/**
 * ripgrep's `--null` output, `path NUL rest newline` each, read in order: the path runs to the
 * NUL whatever it holds (a newline included), the rest to the next newline (a line of text has
 * none). A record cut short at the end (output cap, time limit) is left out.
 */
function nulRecords(stdout: string): RgRecord[] {
  const records: RgRecord[] = [];
  let at = 0;
  for (;;) {
    const nul = stdout.indexOf('\0', at);
    if (nul < 0) break;
    const end = stdout.indexOf('\n', nul + 1);
    if (end < 0) break;
    records.push({ path: clean(stdout.slice(at, nul)), rest: stdout.slice(nul + 1, end) });
    at = end + 1;
  }
  return records;
}

// ripgrep prints `./x` for the root and `src/x` for a relative path; outside paths are absolute.
function clean(p: string): string {
  return p.startsWith('./') ? p.slice(2) : p;
}

/** What a grep stopped by its time limit tells the model about its results. */
function timeNote(ms: number): string {
  const time = ms >= 1000 ? `${Math.round(ms / 1000)} s` : `${ms} ms`;
  return `stopped after ${time}: the pattern is slow on this workspace; these are the results found until then. Narrow path or glob, or simplify the pattern`;
}

/** The files ripgrep opens in every directory it walks (and the repository's exclude file). */
const IGNORE_FILE = /(^|\/)(\.gitignore|\.ignore|\.rgignore|\.git\/info\/exclude)$/;

/** Both signals, either one aborting it; the one given when the other is absent. */
function anySignal(a: AbortSignal | undefined, b: AbortSignal | undefined): AbortSignal | undefined {
  return a && b ? AbortSignal.any([a, b]) : (a ?? b);
}

/** A pattern ripgrep could not even be started with (E2BIG), refused with the limit named. */
function checkPatternSize(field: string, value: string): void {
  const bytes = Buffer.byteLength(value);
  if (bytes <= SEARCH_LIMITS.maxPatternBytes) return;
  throw new SvcError(
    'invalid_input',
    `${field}: ${bytes} bytes is over the ${SEARCH_LIMITS.maxPatternBytes / 1024} KiB limit for a search pattern; search for a shorter, distinctive part of it`,
  );
}

/** A name in the tree: quoted with escapes when it holds a control character (a newline would split it). */
function shown(name: string): string {
  return /[\x00-\x1f\x7f]/.test(name) ? JSON.stringify(name) : name;
}

interface Dir {
  dirs: Map<string, Dir>;
  files: string[];
  count: number;
}

function buildTree(
  files: string[],
  depth: number,
  limit: number,
): { text: string; files: number; directories: number; truncated: boolean } {
  const root: Dir = { dirs: new Map(), files: [], count: 0 };
  for (const file of files) {
    const parts = file.split('/');
    let node = root;
    node.count++;
    for (const part of parts.slice(0, -1)) {
      let next = node.dirs.get(part);
      if (!next) {
        next = { dirs: new Map(), files: [], count: 0 };
        node.dirs.set(part, next);
      }
      next.count++;
      node = next;
    }
    node.files.push(parts[parts.length - 1]);
  }
  const out: string[] = [];
  let entries = 0;
  let dirCount = 0;
  let fileCount = 0;
  let truncated = false;
  const walk = (node: Dir, level: number) => {
    const indent = '  '.repeat(level + 1);
    for (const name of [...node.dirs.keys()].sort()) {
      if (entries >= limit) {
        truncated = true;
        return;
      }
      const child = node.dirs.get(name)!;
      entries++;
      dirCount++;
      if (level + 1 >= depth) {
        out.push(`${indent}${shown(name)}/ (${child.count} file${child.count === 1 ? '' : 's'})`);
      } else {
        out.push(`${indent}${shown(name)}/`);
        walk(child, level + 1);
      }
    }
    for (const name of node.files.sort()) {
      if (entries >= limit) {
        truncated = true;
        return;
      }
      entries++;
      fileCount++;
      out.push(`${indent}${shown(name)}`);
    }
  };
  walk(root, 0);
  return { text: out.join('\n'), files: fileCount, directories: dirCount, truncated };
}

/** A FIFO, socket or device as a search's path: ripgrep would read it until a writer came. */
function refuseSpecial(stat: { isFile(): boolean; isDirectory(): boolean }, target: ResolvedPath): void {
  if (stat.isFile() || stat.isDirectory()) return;
  throw new SvcError(
    'invalid_input',
    `path: ${target.rel} is neither a file nor a directory (a FIFO, socket or device); give a file or a directory`,
  );
}
