/**
 * Bubblewrap (`bwrap`, Debian package bubblewrap): finding it, its version, whether it can run
 * here (user namespaces, /proc), and the argument list for one command.
 *
 * Layout inside the sandbox, in bwrap's order (later mounts go over earlier ones): see
 * ./sandbox.ts, which builds the list of mounts. Every sandbox has its own PID, IPC and UTS
 * namespaces, an own empty network namespace unless `network = "host"`, no capabilities (svc may
 * run as root: with them a command could remount `/` read-write), a new session (no terminal
 * injection), and dies with svc (`--die-with-parent`).
 * @module
 */
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  accessSync,
  constants,
  readFileSync,
  readlinkSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { delimiter, join } from 'node:path';
import { makeDirs } from '../util/make-dirs';

export interface BwrapProbe {
  /** Absolute path of the executable, or null when none was found. */
  path: string | null;
  /** `bubblewrap 0.8.0` → `0.8.0`. */
  version: string | null;
  /** A trivial command ran inside a sandbox of this layout. */
  usable: boolean;
  /** How /proc is provided: a fresh procfs, or the host's bound read-only (containers). */
  proc: 'fresh' | 'host' | null;
  /** Why it is not usable (not found, not executable, the probe's stderr). */
  error: string | null;
}

export interface BindMount {
  path: string;
  /** `hidden`: an empty read-only directory, or an unreadable file, mounted over the path. */
  access: 'read-only' | 'read-write' | 'tmpfs' | 'dev' | 'proc' | 'hidden';
  why: string;
  /** For `hidden`: a file (bound over by /dev/null) rather than a directory (empty tmpfs). */
  file?: boolean;
}

export interface BwrapLayout {
  binds: BindMount[];
  network: 'none' | 'host';
  proc: 'fresh' | 'host';
}

const PROBE_TIMEOUT_MS = 5_000;

/** The bwrap executable: `configured` when set (must be executable), else `bwrap` in PATH. */
export function findBwrap(configured: string | undefined, pathEnv: string | undefined): string | null {
  const candidates = configured
    ? [configured]
    : (pathEnv ?? '')
        .split(delimiter)
        .filter(Boolean)
        .map((dir) => join(dir, 'bwrap'));
  for (const candidate of candidates) {
    try {
      if (!statSync(candidate).isFile()) continue;
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {
      // not there, or not executable
    }
  }
  return null;
}

/**
 * Find bwrap and check it can create a sandbox here: `bwrap --version` and a trivial command in
 * the base layout (a fresh /proc, else the host's), two or three processes, ~15-20 ms. With
 * `cache` a result is kept on disk for the next process, see
 * {@link cachedProbe}.
 */
export function probeBwrap(
  configured: string | undefined,
  env: Readonly<Record<string, string | undefined>>,
  network: 'none' | 'host',
  cache?: ProbeCache,
): BwrapProbe {
  const path = findBwrap(configured, env.PATH);
  if (!path) {
    return {
      path: null,
      version: null,
      usable: false,
      proc: null,
      error: configured
        ? `options.sandbox.bwrap_path ${configured} is not an executable file`
        : 'bwrap is not installed (not found in PATH); install the bubblewrap package',
    };
  }
  if (!cache) return runProbe(path, network);
  return cachedProbe(path, network, cache, () => runProbe(path, network));
}

/** Where a probe's result is kept between processes (the user cache dir). */
export interface ProbeCache {
  dir: string;
  /** Probe anyway and store the result (a long-running process checking again). */
  refresh?: boolean;
}

function runProbe(path: string, network: 'none' | 'host'): BwrapProbe {
  const versionRun = spawnSync(path, ['--version'], { encoding: 'utf8', timeout: PROBE_TIMEOUT_MS });
  const version = /(\d+\.\d+(?:\.\d+)?)/.exec(versionRun.stdout ?? '')?.[1] ?? null;
  let lastError = '';
  for (const proc of ['fresh', 'host'] as const) {
    const args = [...layoutArgs({ binds: baseBinds(proc), network, proc }), '--', 'true'];
    const run = spawnSync(path, args, { encoding: 'utf8', timeout: PROBE_TIMEOUT_MS });
    if (run.status === 0) return { path, version, usable: true, proc, error: null };
    lastError = (run.stderr || run.error?.message || `exit ${run.status}`).trim().split('\n')[0];
  }
  return {
    path,
    version,
    usable: false,
    proc: null,
    error: `bwrap cannot create a sandbox here: ${lastError} (user namespaces may be disabled)`,
  };
}

/** Bump when the probe's layout or result changes: older cached results are then ignored. */
const PROBE_CACHE_FORMAT = 1;
/** A cached result is used this long at most, whatever its key says. */
const PROBE_CACHE_TTL_MS = 24 * 60 * 60 * 1000;

/**
 * The probe's result cached in `cacheDir` (issue 17: the probe's processes were ~15-20 ms of every
 * `svc run`). The key is everything the result depends on: the executable (path, inode, size,
 * mtime), the network layout, the user, this boot, the user and mount namespaces, and the kernel
 * switches for unprivileged user namespaces; a result older than a day is probed again. A missing,
 * corrupt or foreign cache file is ignored and rewritten; failing to write it is ignored.
 */
function cachedProbe(
  path: string,
  network: 'none' | 'host',
  cache: ProbeCache,
  probe: () => BwrapProbe,
): BwrapProbe {
  const key = probeKey(path, network);
  if (!key) return probe();
  const cacheDir = cache.dir;
  const file = join(
    cacheDir,
    `bwrap-probe-${createHash('sha256').update(`${path}\0${network}`).digest('hex').slice(0, 16)}.json`,
  );
  try {
    if (cache.refresh) throw new Error('refresh');
    const cached = JSON.parse(readFileSync(file, 'utf8')) as { key?: unknown; at?: unknown; probe?: unknown };
    const age = Date.now() - Number(cached.at);
    if (cached.key === key && age >= 0 && age < PROBE_CACHE_TTL_MS && isProbe(cached.probe, path)) {
      return cached.probe;
    }
  } catch {
    // no cache yet, or unreadable: probe
  }
  const result = probe();
  const tmp = `${file}.${process.pid}.tmp`;
  try {
    makeDirs(cacheDir);
    writeFileSync(tmp, JSON.stringify({ key, at: Date.now(), probe: result }));
    renameSync(tmp, file);
  } catch {
    try {
      rmSync(tmp, { force: true });
    } catch {
      // the cache dir is not a directory: nothing was written
    }
  }
  return result;
}

function probeKey(path: string, network: 'none' | 'host'): string | undefined {
  let stat: ReturnType<typeof statSync>;
  try {
    stat = statSync(path);
  } catch {
    return undefined;
  }
  const read = (file: string) => {
    try {
      return readFileSync(file, 'utf8').trim();
    } catch {
      return '';
    }
  };
  const link = (file: string) => {
    try {
      return readlinkSync(file);
    } catch {
      return '';
    }
  };
  return JSON.stringify([
    PROBE_CACHE_FORMAT,
    path,
    network,
    stat.ino,
    stat.size,
    stat.mtimeMs,
    process.getuid?.() ?? null,
    read('/proc/sys/kernel/random/boot_id'),
    link('/proc/self/ns/user'),
    link('/proc/self/ns/mnt'),
    read('/proc/sys/kernel/unprivileged_userns_clone'),
    read('/proc/sys/user/max_user_namespaces'),
    read('/proc/sys/kernel/apparmor_restrict_unprivileged_userns'),
  ]);
}

function isProbe(value: unknown, path: string): value is BwrapProbe {
  if (!value || typeof value !== 'object') return false;
  const v = value as Record<string, unknown>;
  const stringOrNull = (x: unknown) => x === null || typeof x === 'string';
  return (
    v.path === path &&
    stringOrNull(v.version) &&
    typeof v.usable === 'boolean' &&
    (v.proc === 'fresh' || v.proc === 'host' || v.proc === null) &&
    stringOrNull(v.error) &&
    (v.usable ? v.proc !== null : v.proc === null)
  );
}

/** The mounts every sandbox starts with, before the workspace. */
export function baseBinds(proc: 'fresh' | 'host'): BindMount[] {
  return [
    { path: '/', access: 'read-only', why: 'the system, read-only' },
    { path: '/dev', access: 'dev', why: 'a minimal /dev (null, zero, random, tty…)' },
    {
      path: '/proc',
      access: proc === 'fresh' ? 'proc' : 'read-only',
      why: proc === 'fresh' ? 'a fresh procfs for the sandbox PID namespace' : "the host's /proc, read-only",
    },
    { path: '/tmp', access: 'tmpfs', why: 'a private /tmp, discarded after the command' },
  ];
}

/** bwrap arguments for the layout (without `--chdir`, `--` and the command). */
export function layoutArgs(layout: BwrapLayout): string[] {
  const args: string[] = [];
  // Hidden directories become read-only only after every mount inside them is made.
  const remount: string[] = [];
  for (const bind of layout.binds) {
    switch (bind.access) {
      case 'read-only':
        args.push('--ro-bind', bind.path, bind.path);
        break;
      case 'read-write':
        args.push('--bind', bind.path, bind.path);
        break;
      case 'tmpfs':
        args.push('--tmpfs', bind.path);
        break;
      case 'dev':
        args.push('--dev', bind.path);
        break;
      case 'proc':
        args.push('--proc', bind.path);
        break;
      case 'hidden':
        if (bind.file) args.push('--ro-bind', '/dev/null', bind.path);
        else {
          args.push('--tmpfs', bind.path);
          remount.push(bind.path);
        }
        break;
      default: {
        const never: never = bind.access;
        throw new Error(`unknown bind access ${String(never)}`);
      }
    }
  }
  for (const path of remount) args.push('--remount-ro', path);
  args.push('--unshare-pid', '--unshare-ipc', '--unshare-uts', '--unshare-cgroup-try');
  if (layout.network === 'none') args.push('--unshare-net');
  args.push('--cap-drop', 'ALL', '--new-session', '--die-with-parent');
  args.push('--setenv', 'TMPDIR', '/tmp', '--setenv', 'SVC_SANDBOX', 'bwrap');
  return args;
}
