/**
 * What keeps svc's own git calls (the run's git summary, checkpoints, the repo readouts, worktrees)
 * from running commands a repository names in its own config. A command the agent runs may write
 * `.git/config` (it is in the workspace), and git runs what that config says: `core.fsmonitor` on
 * every `status`, hooks on `commit` and `worktree add`, a filter driver's `clean` on `add` and
 * `status`, a diff driver's `textconv` on `diff`, `gpg.program` when `log` shows signatures. svc
 * runs git outside the sandbox, so a line of config was a way out of it and, running as svc's
 * user, to everything svc can read (stop 79, found by probing: `git config core.fsmonitor 'env >
 * /tmp/x'` inside the sandbox, then any run or `workspace_snapshot`).
 *
 * So every such call gets command-line settings, which win over every config file (`guardedArgs`):
 * the settings that run a command whatever the repository, switched off; submodules not entered
 * (a submodule's git reads its own config); and each filter, diff and merge driver the
 * repository's own config defines switched off by name. The names come from git's own config
 * parser (`git config --get-regexp`, which runs nothing), asked before each call: a parser of
 * svc's own missed what git reads (several headers on a line, a lone CR, comments after an include
 * path, line continuations, a `.git` file's exact path), and a cache missed a config rewritten
 * with its old size and time. Git's environment is scrubbed as the agent's commands' is
 * (`guardEnv`).
 *
 * Two more ways out needed more than `-c` (stop 81, found by probing): a promisor remote's
 * `uploadpack` ran as svc's user when git fetched a missing object lazily (any `status` or
 * checkpoint then started a transport), and `core.worktree` pointed svc's checkpoints at a
 * directory outside the workspace (a checkpoint read `~/.ssh` into the repository, a restore wrote
 * files anywhere). So svc's git starts no transport at all (`GIT_ALLOW_PROTOCOL` empty, which wins
 * over every `protocol.*.allow` a config sets, and `GIT_NO_LAZY_FETCH`), and the repository is
 * pinned (`GIT_DIR`, `GIT_WORK_TREE`, which win over `core.worktree` and `core.bare`) to the
 * directory holding `.git` above the call's directory, the one git itself would find.
 * @module
 */
import { execFile } from 'node:child_process';
import { statSync } from 'node:fs';
import { basename, dirname, join, resolve, sep } from 'node:path';
import { scrubEnv } from '../sandbox/env';
import {
  alternatesProblem,
  notRegular,
  oversizedPatternFile,
  PATTERN_FILES,
  REPO_FILES,
  readSmall,
  realOrSelf,
  TOP_FILES,
} from './git-guard-files';

/** Settings that run a command, or enter a submodule, whatever the repository: switched off. */
const FIXED: readonly string[] = [
  'core.fsmonitor=false',
  'core.hooksPath=/dev/null',
  'core.pager=cat',
  'core.sshCommand=ssh',
  'core.askPass=',
  'diff.external=',
  'diff.ignoreSubmodules=all',
  'status.submoduleSummary=false',
  'submodule.recurse=false',
  'log.showSignature=false',
  'commit.gpgSign=false',
  'tag.gpgSign=false',
  'protocol.allow=never',
  'protocol.ext.allow=never',
  'credential.helper=',
  'gc.auto=0',
  'maintenance.auto=false',
];

/** `-c` arguments for the fixed settings. */
const FIXED_ARGS: readonly string[] = FIXED.flatMap((setting) => ['-c', setting]);

/** A `.gitattributes` driver (`filter=x`, `diff=x`, `merge=x`) the repository's config defines. */
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

/** svc's git call refused: the repository's config defines what `-c` cannot switch off. */
export class UnguardableGitConfig extends Error {
  constructor(
    readonly what: string,
    message = `the repository's config defines a ${what}, a name svc cannot switch off on git's command line; svc runs no git in it until that section is removed from .git/config`,
  ) {
    super(message);
    this.name = 'UnguardableGitConfig';
  }
}

/**
 * `git` arguments for svc's own call in `cwd`: the guards, then `args`. Rejects with
 * `UnguardableGitConfig` for a driver name `-c` cannot carry (`=` ends its key, a newline its
 * value), the mark of a config made to get past this.
 */
export async function guardedArgs(
  cwd: string,
  args: readonly string[],
  env: Record<string, string>,
): Promise<string[]> {
  const out = [...FIXED_ARGS];
  const { drivers, files } = await repoDrivers(cwd, env);
  for (const key of files) await checkNamedFile(cwd, env, key);
  for (const driver of drivers) {
    if (/[=\n\r\0]/.test(driver.name))
      throw new UnguardableGitConfig(`${driver.kind} driver "${driver.name.replace(/[\n\r\0]/g, ' ')}"`);
    for (const setting of driverSettings(driver)) out.push('-c', setting);
  }
  out.push(...args);
  return out;
}

/**
 * The environment of svc's own git call in `cwd`: svc's, without anything that looks like a
 * secret, no transport, and the repository pinned to the one around `cwd` (see the module).
 */
export function guardEnv(
  baseEnv: Readonly<Record<string, string | undefined>>,
  cwd?: string,
): Record<string, string> {
  // Git's own variables (author, committer, SSH command: the user's, never the repository's) on top
  // of the documented allowlist.
  const env = scrubEnv(baseEnv, { include: ['GIT_*', 'EMAIL'], set: {} }).env;
  env.GIT_ALLOW_PROTOCOL = '';
  env.GIT_NO_LAZY_FETCH = '1';
  env.GIT_NO_REPLACE_OBJECTS = '1';
  // Object directories come from the repository, checked (`checkGitDir`), never from svc's environment.
  delete env.GIT_ALTERNATE_OBJECT_DIRECTORIES;
  if (cwd && env.GIT_DIR === undefined && env.GIT_WORK_TREE === undefined) Object.assign(env, repoPin(cwd));
  return env;
}

/**
 * `GIT_DIR` and `GIT_WORK_TREE` for the repository around `cwd`: the nearest directory holding
 * `.git`, as git's own search finds it. Nothing when there is none, or when that `.git` is not
 * the current user's (git's own search then refuses it as of dubious ownership, which an explicit
 * GIT_DIR would skip). Throws `UnguardableGitConfig` for a `.git` that leads out of the directory
 * holding it where no layout of git's own puts it (see `checkGitDir`).
 */
export function repoPin(cwd: string): Record<string, string> {
  const uid = process.getuid?.();
  let dir = cwd;
  for (let depth = 0; depth < 256; depth++) {
    const dotGit = join(dir, '.git');
    const stat = statSync(dotGit, { throwIfNoEntry: false });
    if (stat && (stat.isDirectory() || stat.isFile())) {
      if (uid !== undefined && stat.uid !== uid) return {};
      checkGitDir(dir, dotGit, stat.isFile());
      return { GIT_DIR: dotGit, GIT_WORK_TREE: dir };
    }
    const parent = dirname(dir);
    if (parent === dir) return {};
    dir = parent;
  }
  return {};
}

/**
 * A `.git` svc's git may use: the repository it leads to (through a symlink, a `.git` file's
 * `gitdir:`, a `commondir` file) is inside `top`, or is where git itself puts a linked worktree's
 * (`<repo>/worktrees/<name>`, whose `gitdir` file names this `.git` back) or a submodule's
 * (`<superproject>/.git/modules/…`, the superproject around `top`). A command the agent runs can
 * write `.git` (it is in the workspace) but nothing outside: a `.git` file naming another
 * repository on the machine made svc's checkpoints read and reset that repository (stop 81,
 * found by probing).
 */
function checkGitDir(top: string, dotGit: string, isFile: boolean): void {
  const realTop = realOrSelf(top);
  const inside = (path: string) => path === realTop || path.startsWith(`${realTop}${sep}`);
  let gitDir = realOrSelf(dotGit);
  if (isFile) {
    const named = /^gitdir: (.+)$/m.exec(readSmall(dotGit))?.[1]?.trim();
    if (!named) return; // not a gitfile git can read: git refuses it itself
    gitDir = realOrSelf(resolve(top, named));
    const linked =
      basename(dirname(gitDir)) === 'worktrees' &&
      realOrSelf(resolve(gitDir, readSmall(join(gitDir, 'gitdir')).trim() || '.')) === realOrSelf(dotGit);
    const at = gitDir.indexOf(`${sep}.git${sep}modules${sep}`);
    const submodule = at > 0 && realTop.startsWith(`${gitDir.slice(0, at)}${sep}`);
    if (!inside(gitDir) && !linked && !submodule) throw outside(dotGit, gitDir);
  } else if (!inside(gitDir)) throw outside(dotGit, gitDir);
  const common = readSmall(join(gitDir, 'commondir')).trim();
  const commonDir = common ? realOrSelf(resolve(gitDir, common)) : gitDir;
  if (common) {
    const ownLayout = basename(dirname(gitDir)) === 'worktrees' && dirname(dirname(gitDir)) === commonDir;
    if (!inside(commonDir) && !ownLayout) throw outside(join(gitDir, 'commondir'), commonDir);
  }
  // Files git opens: one that is not a regular file (a FIFO) would hold svc's git call in `open`
  // (stop 81, found by probing).
  const dirs = commonDir === gitDir ? [gitDir] : [gitDir, commonDir];
  const files = [
    ...dirs.flatMap((dir) => REPO_FILES.map((name) => join(dir, name))),
    ...TOP_FILES.map((name) => join(top, name)),
  ];
  for (const path of files) {
    if (notRegular(path))
      throw new UnguardableGitConfig(
        'git file',
        `${path} is not a regular file; svc runs no git there until it is one (or removed)`,
      );
  }
  const patternFiles = [
    ...dirs.flatMap((dir) => PATTERN_FILES.repo.map((name) => join(dir, name))),
    ...PATTERN_FILES.top.map((name) => join(top, name)),
  ];
  for (const path of patternFiles) {
    const oversized = oversizedPatternFile(path);
    if (oversized) throw new UnguardableGitConfig('git file', oversized);
  }
  // The objects git reads: the repository's own, and those its alternates name, inside the
  // workspace. A linked worktree's or a submodule's repository outside it is not the agent's to write.
  if (inside(commonDir)) {
    const problem = alternatesProblem(join(commonDir, 'objects'), inside);
    if (problem)
      throw new UnguardableGitConfig(
        'object directory',
        `${problem}; svc runs no git there until the repository keeps its own objects (\`git repack -a -d\`, then remove .git/objects/info/alternates)`,
      );
  }
}

function outside(what: string, where: string): UnguardableGitConfig {
  return new UnguardableGitConfig(
    'git dir',
    `${what} leads to ${where}, outside the workspace's repository and not where git puts a worktree's or a submodule's; svc runs no git there until it is restored (a .git directory, or a .git file naming one inside the workspace)`,
  );
}

const DRIVER_KEYS = '^(filter|diff|merge)\\.|^core\\.(excludesfile|attributesfile)$|^mailmap\\.file$';

/** Settings naming a file git opens on svc's calls (`status`, `add`, `log`). */
const FILE_KEYS = new Set(['core.excludesfile', 'core.attributesfile', 'mailmap.file']);

/**
 * The file the repository's config names in `key` is a regular one (or missing): a FIFO there held
 * svc's git call in `open` until its timeout (found by probing). Asked only when the repository's
 * own config sets `key`, so a call pays for it only then.
 */
async function checkNamedFile(cwd: string, env: Record<string, string>, key: string): Promise<void> {
  const value = (await gitConfig(cwd, env, ['config', '-z', '--includes', '--path', '--get', key]))
    ?.split('\0')[0]
    ?.trim();
  if (!value) return;
  // Relative to the work tree's top, where git runs its commands.
  const path = resolve(env.GIT_WORK_TREE ?? cwd, value);
  if (notRegular(path))
    throw new UnguardableGitConfig(
      'file',
      `the repository's config sets ${key} to ${path}, which is not a regular file; svc runs no git there until it is one (or the setting is removed from .git/config)`,
    );
  const oversized = key === 'mailmap.file' ? undefined : oversizedPatternFile(path);
  if (oversized) throw new UnguardableGitConfig('file', `the repository's config sets ${key}: ${oversized}`);
}

/**
 * The drivers the repository's own config (local and worktree scopes, and what they include)
 * defines, as git reads it; the user's and the system's config are trusted (git-lfs's filter
 * stays on). Git older than 2.26 has no `--show-scope`: then every driver is switched off.
 */
async function repoDrivers(
  cwd: string,
  env: Record<string, string>,
): Promise<{ drivers: Driver[]; files: Set<string> }> {
  // Names only (`--name-only`): a value can be megabytes, and the probe must read all of it.
  const probe = ['config', '-z', '--name-only', '--includes', '--get-regexp', DRIVER_KEYS];
  let scoped = true;
  let text = await gitConfig(cwd, env, ['config', '-z', '--show-scope', ...probe.slice(2)]);
  if (text === undefined) {
    scoped = false;
    text = await gitConfig(cwd, env, probe);
  }
  const drivers = new Map<string, Driver>();
  const fields = (text ?? '').split('\0');
  const keys: string[] = [];
  if (scoped) {
    // `<scope>\0<key>\0`, one after another.
    for (let i = 0; i + 1 < fields.length; i += 2) {
      if (fields[i] !== 'system' && fields[i] !== 'global') keys.push(fields[i + 1]);
    }
  } else keys.push(...fields);
  const files = new Set(keys.filter((key) => FILE_KEYS.has(key)));
  for (const key of keys) if (!files.has(key)) addDriver(drivers, key);
  if (drivers.size > MAX_DRIVERS)
    throw new UnguardableGitConfig(
      'driver list',
      `the repository's config defines ${drivers.size} filter, diff and merge drivers (more than ${MAX_DRIVERS}); svc runs no git in it until they are removed from .git/config`,
    );
  return { drivers: [...drivers.values()], files };
}

/** More drivers than a repository has any use for: the mark of a config made to overflow the guards. */
const MAX_DRIVERS = 200;

/** `filter.<name>.clean` → the filter `<name>` (a name may hold dots: `filter.a.b.clean` is `a.b`). */
function addDriver(drivers: Map<string, Driver>, key: string): void {
  const first = key.indexOf('.');
  const last = key.lastIndexOf('.');
  if (first < 0 || last <= first) return;
  const kind = key.slice(0, first);
  if (kind !== 'filter' && kind !== 'diff' && kind !== 'merge') return;
  const name = key.slice(first + 1, last);
  drivers.set(`${kind}\0${name}`, { kind, name });
}

/**
 * `git config …` in `cwd` with the fixed guards (reading config runs nothing, but no setting gets
 * the chance): its output, '' when nothing matched (exit 1), undefined when git refused the
 * arguments (exit 129: an older git). Anything else (a timeout, an output past the cap, a config
 * git cannot parse) rejects: the guard fails closed, since the call it guards would run with
 * nothing switched off (stop 81, found by probing: 17 MB of config made the probe fail, read as
 * "no drivers", and the next call ran the repository's filter as svc's user).
 */
function gitConfig(cwd: string, env: Record<string, string>, args: string[]): Promise<string | undefined> {
  return new Promise((resolve, reject) => {
    execFile(
      'git',
      [...FIXED_ARGS, ...args],
      { cwd, env, encoding: 'utf8', timeout: 10_000, maxBuffer: 4 * 1024 * 1024, killSignal: 'SIGKILL' },
      (error, stdout, stderr) => {
        if (!error) return resolve(stdout);
        const code = (error as { code?: unknown }).code;
        if (code === 1) return resolve('');
        if (code === 129) return resolve(undefined);
        const why =
          typeof code === 'number'
            ? `git could not read it: ${stderr.trim().split('\n')[0]?.slice(0, 300) || `exit ${code}`}`
            : code === 'ERR_CHILD_PROCESS_STDIO_MAXBUFFER'
              ? 'its driver names run past 4 MiB'
              : 'reading it took more than 10 s';
        reject(
          new UnguardableGitConfig(
            'config',
            `svc could not check the repository's git config for commands it names (${why}); svc runs no git in it until .git/config is repaired`,
          ),
        );
      },
    );
  });
}
