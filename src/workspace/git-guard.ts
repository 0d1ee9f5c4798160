/**
 * What keeps svc's own git calls (the run's git summary, checkpoints, the repo readouts, worktrees)
 * from running commands a repository names in its own config. A command the agent runs may write
 * `.git/config` (it is in the workspace), and git runs what that config says: `core.fsmonitor` on
 * every `status`, hooks on `commit` and `worktree add`, a filter driver's `clean` on `add` and
 * `status`, a diff driver's `textconv` on `diff`, `gpg.program` when it signs. svc runs git outside
 * the sandbox with its own environment, so a line of config was a way out of the sandbox and to
 * svc's provider keys (stop 79, found by probing: `git config core.fsmonitor 'env > /tmp/x'` inside
 * the sandbox, then any run or `workspace_snapshot`).
 *
 * So every such call gets command-line settings, which win over every config file, switching each
 * of those off (`guardArgs`), filter and diff drivers by the names the repository's config files
 * define (read here, includes followed, without running git), and an environment without secrets
 * (`guardEnv`: the same scrubbing as the commands the agent runs).
 * @module
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, isAbsolute, join, resolve } from 'node:path';
import { scrubEnv } from '../sandbox/env';

/** Settings that run a command whatever the repository, switched off. */
const FIXED: readonly string[] = [
  'core.fsmonitor=false',
  'core.hooksPath=/dev/null',
  'core.pager=cat',
  'diff.external=',
  'commit.gpgSign=false',
  'tag.gpgSign=false',
  'protocol.ext.allow=never',
  'credential.helper=',
];

/** A driver of `.gitattributes` (`filter=x`, `diff=x`, `merge=x`) as its config section names it. */
interface Driver {
  kind: 'filter' | 'diff' | 'merge';
  name: string;
}

/** The settings that switch one driver off: an empty filter is no filter (`required` off, else it fails). */
function driverSettings({ kind, name }: Driver): string[] {
  const key = `${kind}.${name}`;
  if (kind === 'filter')
    return [`${key}.clean=`, `${key}.smudge=`, `${key}.process=`, `${key}.required=false`];
  if (kind === 'diff') return [`${key}.textconv=cat`, `${key}.command=`];
  return [`${key}.driver=`];
}

/** `git` arguments for svc's own call in `cwd`: the guards, then `args`. */
export function guardArgs(cwd: string, args: readonly string[]): string[] {
  const settings = [...FIXED];
  for (const driver of repoDrivers(cwd)) settings.push(...driverSettings(driver));
  const out: string[] = [];
  for (const setting of settings) out.push('-c', setting);
  out.push(...args);
  return out;
}

/**
 * A driver name `-c` cannot carry (`=` ends its key, a newline its value), the mark of a config
 * made to get past the guards: svc runs no git on such a repository (what to name in the refusal).
 */
export function unguardable(cwd: string): string | undefined {
  for (const { kind, name } of repoDrivers(cwd))
    if (/[=\n\r\0]/.test(name)) return `${kind} driver "${name.replace(/[\n\r\0]/g, ' ')}"`;
  return undefined;
}

/** The environment of svc's own git call: svc's, without anything that looks like a secret. */
export function guardEnv(baseEnv: Readonly<Record<string, string | undefined>>): Record<string, string> {
  // Git's own variables (author, committer, SSH command: the user's, never the repository's) on top
  // of the documented allowlist.
  return scrubEnv(baseEnv, { include: ['GIT_*', 'EMAIL'], set: {} }).env;
}

/** The config files git reads for the repository around `cwd`, and their drivers, cached by file state. */
const cache = new Map<string, { stamp: string; drivers: Driver[] }>();

function repoDrivers(cwd: string): Driver[] {
  const files = repoConfigFiles(cwd);
  if (files.length === 0) return [];
  const stamp = files.map(stampOf).join('|');
  const key = files.join('|');
  const hit = cache.get(key);
  if (hit && hit.stamp === stamp) return hit.drivers;
  const drivers: Driver[] = [];
  const seen = new Set<string>();
  for (const file of files) collectDrivers(file, drivers, seen, 0);
  // Kept for the next call only when no other file was read: an included file can change alone.
  if (seen.size === files.length) cache.set(key, { stamp, drivers });
  else cache.delete(key);
  return drivers;
}

function stampOf(file: string): string {
  try {
    const stat = statSync(file);
    return `${stat.mtimeMs}:${stat.size}:${stat.ino}`;
  } catch {
    return 'none';
  }
}

/** `.git/config` (the common one for a linked worktree) and `config.worktree`, as git finds them. */
function repoConfigFiles(cwd: string): string[] {
  let dir = resolve(cwd);
  for (let i = 0; i < 256; i++) {
    const dotGit = join(dir, '.git');
    const gitDir = gitDirOf(dotGit);
    if (gitDir) {
      let common = gitDir;
      const commondir = join(gitDir, 'commondir');
      if (existsSync(commondir)) {
        const target = readText(commondir)?.trim();
        if (target) common = isAbsolute(target) ? target : resolve(gitDir, target);
      }
      // A submodule's `git status` (the superproject's recurses into it) reads its own config,
      // under `modules/` of the superproject's git directory: its drivers are switched off too.
      const files = [join(common, 'config'), join(gitDir, 'config.worktree')];
      files.push(...moduleConfigs(join(common, 'modules'), 0));
      return files.filter((f) => existsSync(f));
    }
    const parent = dirname(dir);
    if (parent === dir) break;
    dir = parent;
  }
  return [];
}

/** The `config` of each submodule's git directory under `modules` (nested ones too, 4 deep at most). */
function moduleConfigs(modules: string, depth: number): string[] {
  if (depth > 4) return [];
  let names: string[];
  try {
    names = readdirSync(modules);
  } catch {
    return [];
  }
  const out: string[] = [];
  for (const name of names.slice(0, 256)) {
    const dir = join(modules, name);
    out.push(join(dir, 'config'), ...moduleConfigs(join(dir, 'modules'), depth + 1));
  }
  return out;
}

/** The git directory a `.git` entry names: itself, or the `gitdir:` of a `.git` file. */
function gitDirOf(dotGit: string): string | undefined {
  try {
    const stat = statSync(dotGit);
    if (stat.isDirectory()) return dotGit;
    if (!stat.isFile()) return undefined;
    const line = /^gitdir:\s*(.+)$/m.exec(readText(dotGit) ?? '')?.[1]?.trim();
    if (!line) return undefined;
    return isAbsolute(line) ? line : resolve(dirname(dotGit), line);
  } catch {
    return undefined;
  }
}

function readText(file: string): string | undefined {
  try {
    // Config files are small; a FIFO or device in their place is not read (no blocking read).
    return statSync(file).isFile() ? readFileSync(file, 'utf8') : undefined;
  } catch {
    return undefined;
  }
}

const SECTION = /^\s*\[\s*([A-Za-z][\w.-]*)(?:\s+"((?:[^"\\\n]|\\.)*)")?\s*\]/;

/**
 * The filter, diff and merge drivers a config file (and what it includes) defines. Every
 * `include.path` and `includeIf.*.path` is followed whatever its condition: switching off a driver
 * that is not in force costs nothing.
 */
function collectDrivers(file: string, out: Driver[], seen: Set<string>, depth: number): void {
  if (depth > 10 || seen.has(file)) return;
  seen.add(file);
  const text = readText(file);
  if (text === undefined) return;
  let section = '';
  for (const line of text.split(/\r?\n/)) {
    const header = SECTION.exec(line);
    if (header) {
      const [, rawName, sub] = header;
      const name = rawName.toLowerCase();
      // `[filter "x"]`, or the old `[filter.x]` (its subsection lower-cased, as git reads it).
      const dot = name.indexOf('.');
      const kind = dot < 0 ? name : name.slice(0, dot);
      const subsection =
        sub !== undefined ? sub.replace(/\\(.)/g, '$1') : dot < 0 ? undefined : name.slice(dot + 1);
      section = kind;
      if ((kind === 'filter' || kind === 'diff' || kind === 'merge') && subsection !== undefined)
        out.push({ kind, name: subsection });
      continue;
    }
    if (section !== 'include' && section !== 'includeif') continue;
    const path = /^\s*path\s*=\s*(.*?)\s*$/i.exec(line)?.[1]?.replace(/^"(.*)"$/, '$1');
    if (!path) continue;
    const home = process.env.HOME ?? '';
    const target = path.startsWith('~/') ? join(home, path.slice(2)) : resolve(dirname(file), path);
    collectDrivers(target, out, seen, depth + 1);
  }
}
