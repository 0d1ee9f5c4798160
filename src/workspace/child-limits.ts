/**
 * How svc starts a helper that runs outside the sandbox (ripgrep, git) on Linux: through
 * util-linux's `setpriv --pdeathsig KILL`, so it dies with svc even when svc is SIGKILLed (Node
 * has no die-with-parent, and an `exit` handler never runs then), and through `prlimit --data=N`,
 * so what the workspace holds cannot make it take the machine's memory (a sparse 1 GB
 * `.gitignore` took ripgrep past 22 GB; found by probing). git goes through them for its heavy
 * commands only (./git.ts, HEAVY_GIT). The death signal is
 * set by setpriv on itself and kept across the execs of prlimit and the helper (neither is
 * set-user-ID); the parent it watches is the thread that forked it, Node's main thread (libuv
 * spawns there), which lives as long as svc. The same pid runs setpriv, prlimit and the helper,
 * so killing and watching it (fifo-wait.ts) work as before.
 *
 * The data limit (RLIMIT_DATA, Linux 4.7 and later) counts the heap and private writable
 * mappings, not a file ripgrep maps to search it: a search of one large file keeps working at any
 * limit. Where a wrapper is missing (not Linux, an older util-linux without `--pdeathsig`), the
 * helper runs as before, without it: each is tried once, at the first call.
 * @module
 */
import { execFile } from 'node:child_process';

export interface Wrappers {
  /** `setpriv --pdeathsig KILL` works here. */
  setpriv: boolean;
  /** `prlimit --data=N` works here. */
  prlimit: boolean;
}

let probed: Promise<Wrappers> | undefined;

/** Whether `file args… -- true` runs (exit 0) within 5 s. */
function works(file: string, args: string[]): Promise<boolean> {
  return new Promise((resolve) => {
    execFile(file, [...args, '--', 'true'], { timeout: 5_000, killSignal: 'SIGKILL' }, (error) =>
      resolve(!error),
    );
  });
}

/** The wrappers this machine has, tried once (none off Linux). */
export function wrappers(): Promise<Wrappers> {
  if (process.platform !== 'linux') return Promise.resolve({ setpriv: false, prlimit: false });
  probed ??= Promise.all([
    works('setpriv', ['--pdeathsig', 'KILL']),
    works('prlimit', [`--data=${1024 * 1024 * 1024}`]),
  ]).then(([setpriv, prlimit]) => ({ setpriv, prlimit }));
  return probed;
}

/** For tests: the wrappers as given (undefined: tried again at the next call). */
export function setWrappersForTest(value: Wrappers | undefined): void {
  probed = value && Promise.resolve(value);
}

export interface Wrapped {
  file: string;
  args: string[];
  /** The data limit in force, in bytes (0: none). */
  memoryLimitBytes: number;
}

/**
 * `file args` as started through the wrappers there are: dying with svc, and with at most
 * `memoryLimitBytes` of data (0: no limit).
 */
export async function wrapped(file: string, args: string[], memoryLimitBytes = 0): Promise<Wrapped> {
  const have = await wrappers();
  const limit = have.prlimit && memoryLimitBytes > 0 ? Math.floor(memoryLimitBytes) : 0;
  const argv = [file, ...args];
  if (limit) argv.unshift('prlimit', `--data=${limit}`, '--');
  if (have.setpriv) argv.unshift('setpriv', '--pdeathsig', 'KILL', '--');
  return { file: argv[0], args: argv.slice(1), memoryLimitBytes: limit };
}

/**
 * The exit codes setpriv and prlimit use when they cannot start the program (util-linux's
 * EXIT_CANNOT_INVOKE, EXIT_ENOENT), which the program itself would have been an `ENOENT` spawn
 * error.
 */
export const WRAPPER_EXEC_FAILED: ReadonlySet<number> = new Set([126, 127]);
