/**
 * What a search may show: never `.git/`, svc's data dir or a protected location (credential store,
 * deny list; docs/permissions.md#paths). Two layers, because ripgrep's own hiding gives way: a
 * `--glob` the caller gives (grep's `glob`, glob's pattern, ls's `ignore`) overrides an
 * `--ignore-file`, so `grep {glob: "*"}` read `~/.ssh` inside the workspace.
 * - ripgrep is told twice: an ignore file, and the same entries as `--glob '!…'` placed after every
 *   caller's glob (of two globs that match, ripgrep obeys the later one), so it never reads them.
 * - every path it answers with then goes through the check `view` refuses with (the sandbox's
 *   protected locations, symlinks resolved) and is dropped when protected, whatever ripgrep did.
 * @module
 */
import { createHash } from 'node:crypto';
import { existsSync, lstatSync, renameSync, writeFileSync } from 'node:fs';
import { basename, dirname, isAbsolute, join, relative, resolve, sep } from 'node:path';
import { within } from '../sandbox/protected';
import { makeDirs } from '../util/make-dirs';
import { type PathResolver, realpathOfDeepest } from './paths';

export interface SearchDeps {
  paths: PathResolver;
  dataDir: string;
  /** Protected locations (data dir, credential store, deny list): never listed or searched. */
  hidden?: () => string[];
  /**
   * The check `view` refuses a path with (the sandbox's), for every path a search answers with;
   * without it, anything in a `hidden` location is protected.
   */
  protectedMatcher?: () => (real: string) => unknown;
}

/** One search's view of the protected locations: ripgrep's flags around `flags`, and the filter. */
export function searchHiding(deps: SearchDeps): {
  args: (flags: string[]) => string[];
  visible: (path: string) => boolean;
} {
  const hidden = deps.hidden?.() ?? [];
  const lines = hiddenLines(deps.paths, deps.dataDir, hidden);
  const isProtected = deps.protectedMatcher?.() ?? ((real: string) => hidden.some((h) => within(h, real)));
  const ignoreFile = writeIgnoreFile(deps.dataDir, lines);
  return {
    // The hidden globs last: a caller's glob before them cannot bring a hidden path back.
    args: (flags) => [
      ...['--hidden', '--no-require-git', '--ignore-file', ignoreFile, '--no-config'],
      ...flags,
      ...hiddenGlobs(lines),
    ],
    visible: visibleFilter(deps.paths.root, isProtected),
  };
}

/**
 * `.git/`, the data dir and the protected locations inside the workspace, as gitignore-style
 * lines. Anchored lines are relative to ripgrep's cwd, the workspace root; glob characters in a
 * name are escaped, so a directory named `a[1]` hides itself and nothing else.
 */
export function hiddenLines(paths: PathResolver, dataDir: string, hidden: readonly string[]): string[] {
  const lines = ['.git/'];
  for (const dir of [dataDir, ...hidden]) {
    for (const r of [relative(paths.realRoot, dir), relative(paths.root, dir)]) {
      if (r && !r.startsWith('..') && !isAbsolute(r)) lines.push(`/${escapeGlob(r.split(sep).join('/'))}`);
    }
  }
  return [...new Set(lines)];
}

/** The hidden lines as `--glob '!…'` flags, to follow every caller's glob on the command line. */
export function hiddenGlobs(lines: readonly string[]): string[] {
  return lines.flatMap((line) => ['--glob', `!${line}`]);
}

function escapeGlob(path: string): string {
  return path.replace(/[\\*?[\]{}!]/g, (c) => `\\${c}`);
}

/**
 * The hidden lines as a ripgrep ignore file: named by its content's hash, written once (to a
 * temporary name, then renamed), never rewritten. So its bytes are a function of the workspace
 * and the protected locations alone: two workspaces (or nodes) sharing a data dir never overwrite
 * each other's, no ripgrep ever reads a half-written one, and writing it changes nothing anyone
 * could observe, which lets a search run while its step's first statement is in flight
 * (`readsOnly`, docs/performance-log.md p-readsmore).
 */
export function writeIgnoreFile(dataDir: string, lines: readonly string[]): string {
  const text = `${lines.join('\n')}\n`;
  const hash = createHash('sha256').update(text).digest('hex').slice(0, 16);
  const file = join(dataDir, `search-${hash}.ignore`);
  if (existsSync(file)) return file;
  makeDirs(dataDir);
  const temporary = `${file}.${process.pid}.${Math.random().toString(36).slice(2)}`;
  writeFileSync(temporary, text);
  renameSync(temporary, file);
  return file;
}

/**
 * A filter for the paths one search answers with (workspace-relative as ripgrep prints them, or
 * absolute outside it): false for a path in a protected location. A path is checked where it is
 * (its directory's real path, looked up once per directory) and, when it is a symlink, where it
 * points too, so neither a protected directory nor a link into one gets through.
 */
export function visibleFilter(
  root: string,
  isProtected: (real: string) => unknown,
): (path: string) => boolean {
  const realDirs = new Map<string, string>();
  return (path) => {
    const abs = resolve(root, path);
    const dir = dirname(abs);
    let realDir = realDirs.get(dir);
    if (realDir === undefined) {
      realDir = realpathOfDeepest(dir);
      realDirs.set(dir, realDir);
    }
    if (isProtected(join(realDir, basename(abs)))) return false;
    const link = lstatSync(abs, { throwIfNoEntry: false });
    return !link?.isSymbolicLink() || !isProtected(realpathOfDeepest(abs));
  };
}
