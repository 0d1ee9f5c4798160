/**
 * ripgrep, from the `@vscode/ripgrep` package (the binary ships inside the npm package; nothing is
 * downloaded), with `rg` on PATH as the fallback. Output is collected up to a byte cap, after which
 * ripgrep is stopped, so a query matching a whole tree costs no more than the cap; and for a time
 * at most, so a pattern that is slow on what it searches (`x{1000}{1000}` over a 10 MB line) ends
 * with what it found so far instead of never. ripgrep runs outside the sandbox, and a command the
 * agent ran can leave a FIFO where it opens a file (a subdirectory's `.gitignore`): one waiting to
 * open a FIFO is seen and stopped within a second (./fifo-wait.ts). Every ripgrep still running
 * is killed when its caller's signal aborts and when svc's process exits, and on Linux dies with svc
 * even when svc is SIGKILLed (./child-limits.ts): none outlives svc. There it runs with a cap on
 * its memory (`memoryLimitBytes`): a huge ignore file (a sparse 1 GB `.gitignore` took it past
 * 22 GB) or a multiline search of a file larger than the cap ends the search with
 * `outOfMemory`, not with the machine's memory.
 * @module
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import { SvcError } from '../errors';
import { WRAPPER_EXEC_FAILED, wrapped } from './child-limits';
import { throwIfCancelled } from './context';
import { watchFifoWait } from './fifo-wait';

let cachedPath: string | undefined;

export function rgPath(): string {
  if (cachedPath) return cachedPath;
  try {
    const requireHere = createRequire(import.meta.url);
    cachedPath = (requireHere('@vscode/ripgrep') as { rgPath: string }).rgPath;
  } catch {
    cachedPath = 'rg';
  }
  return cachedPath;
}

export interface RgResult {
  stdout: string;
  stderr: string;
  /** ripgrep's exit code: 0 matches, 1 none, 2 error (possibly with partial output). */
  code: number | null;
  /** Output went past `maxBytes`, the time ran out, or a FIFO stopped it, and ripgrep was stopped. */
  truncated: boolean;
  /** The time ran out (`timeLimitMs`) and ripgrep was stopped: the output is what it found until then. */
  timedOut: boolean;
  /**
   * ripgrep was waiting to open a FIFO (an ignore file, most likely) and was stopped: the output is
   * what it found until then, without the directory it was reading.
   */
  fifo: boolean;
  /**
   * ripgrep ran out of memory (the cap of `memoryLimitBytes`, or the machine's) and stopped: the
   * output is partial. An oversized ignore file, a very long line or a multiline search of a
   * large file.
   */
  outOfMemory: boolean;
  /** The signal that ended ripgrep, when it was not svc's kill (an out-of-memory abort: SIGABRT). */
  signal: NodeJS.Signals | null;
  /** The memory cap ripgrep ran under, in bytes (0: none, or no `prlimit` here). */
  memoryLimitBytes: number;
}

/** ripgrep's memory cap unless a caller gives one (docs/coding-tools.md): every legitimate search fits. */
export const RG_MEMORY_LIMIT_BYTES = 2 * 1024 * 1024 * 1024;

export interface RgOptions {
  cwd: string;
  signal?: AbortSignal;
  maxBytes?: number;
  /** The longest ripgrep runs: every call has one (a FIFO where /proc shows nothing ends here too). */
  timeLimitMs: number;
  /** The byte that ends a record (a NUL for `--files --null`): output cut short keeps whole ones. */
  recordEnd?: number;
  /** How often the running ripgrep is looked at for a wait on a FIFO (./fifo-wait.ts); 0: never. */
  fifoCheckMs?: number;
  /** The most memory (data) ripgrep may take, in bytes, on Linux: RG_MEMORY_LIMIT_BYTES unless given; 0: no cap. */
  memoryLimitBytes?: number;
}

/** Every ripgrep running now: killed when svc's process exits, so none is left behind. */
const live = new Set<ChildProcess>();
const killLive = () => {
  for (const child of live) child.kill('SIGKILL');
};

function track(child: ChildProcess): () => void {
  if (live.size === 0) process.on('exit', killLive);
  live.add(child);
  return () => {
    live.delete(child);
    if (live.size === 0) process.off('exit', killLive);
  };
}

/** The pids of the ripgreps running now (for tests and diagnostics). */
export function runningRg(): number[] {
  return [...live].flatMap((child) => (child.pid === undefined ? [] : [child.pid]));
}

export async function runRg(args: string[], options: RgOptions): Promise<RgResult> {
  throwIfCancelled(options.signal, 'the search');
  const maxBytes = options.maxBytes ?? 8 * 1024 * 1024;
  const recordEnd = options.recordEnd ?? 10;
  // Piped, ripgrep holds its output in a block buffer that a kill loses: line-buffered, each
  // line is written as found, so a stopped search still has what it found.
  const command = await wrapped(
    rgPath(),
    ['--line-buffered', ...args],
    options.memoryLimitBytes ?? RG_MEMORY_LIMIT_BYTES,
  );
  throwIfCancelled(options.signal, 'the search');
  const viaWrapper = command.file !== rgPath();
  return new Promise<RgResult>((resolvePromise, reject) => {
    const child = startRg(command.file, command.args, options.cwd);
    const untrack = track(child);
    const chunks: Buffer[] = [];
    let bytes = 0;
    let truncated = false;
    let timedOut = false;
    let fifo = false;
    let stderr = '';
    const kill = () => child.kill('SIGKILL');
    options.signal?.addEventListener('abort', kill, { once: true });
    const timer = setTimeout(() => {
      timedOut = true;
      kill();
    }, options.timeLimitMs);
    // A ripgrep waiting to open a FIFO never ends by itself: stopped now, not at the time limit.
    const onFifo = () => {
      fifo = true;
      kill();
    };
    const fifoCheckMs = options.fifoCheckMs ?? 500;
    const stopWatching = fifoCheckMs ? watchFifoWait(child.pid, onFifo, fifoCheckMs) : () => {};
    const done = () => {
      clearTimeout(timer);
      stopWatching();
      untrack();
      options.signal?.removeEventListener('abort', kill);
    };
    child.stdout?.on('data', (chunk: Buffer) => {
      if (truncated) return;
      if (bytes + chunk.length > maxBytes) {
        // Keep whole records only: cut at the last record end that fits.
        const room = chunk.subarray(0, maxBytes - bytes);
        const cut = room.lastIndexOf(recordEnd);
        if (cut >= 0) chunks.push(room.subarray(0, cut + 1));
        truncated = true;
        kill();
        return;
      }
      chunks.push(chunk);
      bytes += chunk.length;
    });
    child.stderr?.on('data', (chunk: Buffer) => {
      if (stderr.length < 8192) stderr += chunk.toString();
    });
    const notStarted = (why: string, cause?: Error) =>
      new SvcError('unavailable', `ripgrep could not start (${why}); reinstall svc's dependencies`, {
        cause,
      });
    child.on('error', (error) => {
      done();
      reject(notStarted(error.message, error));
    });
    child.on('close', (code, signal) => {
      done();
      if (options.signal?.aborted) {
        reject(new SvcError('cancelled', 'the search was cancelled'));
        return;
      }
      // setpriv or prlimit could not exec ripgrep (rg's own codes are 0, 1 and 2).
      if (viaWrapper && code !== null && WRAPPER_EXEC_FAILED.has(code)) {
        reject(notStarted(stderr.trim().split('\n')[0] || `exit ${code}`));
        return;
      }
      let stdout = Buffer.concat(chunks);
      const stopped = timedOut || fifo;
      // Killed mid-write: keep whole records only, as at the byte cap.
      if (stopped && !truncated) stdout = stdout.subarray(0, stdout.lastIndexOf(recordEnd) + 1);
      const killedByUs = truncated || stopped;
      resolvePromise({
        stdout: stdout.toString('utf8'),
        stderr,
        code: killedByUs ? 0 : code,
        truncated: killedByUs,
        timedOut: timedOut && !fifo,
        fifo,
        outOfMemory: !killedByUs && (signal === 'SIGABRT' || OUT_OF_MEMORY.test(stderr)),
        signal: killedByUs ? null : signal,
        memoryLimitBytes: command.memoryLimitBytes,
      });
    });
  });
}

/** What ripgrep (Rust's allocator) prints when an allocation fails, before it aborts. */
const OUT_OF_MEMORY = /memory allocation of \d+ bytes failed|out of memory/i;

/**
 * Spawn ripgrep. An argument list the system will not take (one argument over 128 KiB, all of them
 * over ARG_MAX) fails in `spawn` itself, synchronously, with E2BIG: that is the caller's input, and
 * says so, instead of an internal error.
 */
function startRg(file: string, args: string[], cwd: string) {
  try {
    return spawn(file, args, { cwd, stdio: ['ignore', 'pipe', 'pipe'] });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'E2BIG') {
      throw new SvcError(
        'invalid_input',
        'the search patterns are too long for the system to pass to ripgrep (E2BIG); give shorter patterns or globs',
        { cause: error },
      );
    }
    throw error;
  }
}
