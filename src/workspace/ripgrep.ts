/**
 * ripgrep, from the `@vscode/ripgrep` package (the binary ships inside the npm package; nothing is
 * downloaded), with `rg` on PATH as the fallback. Output is collected up to a byte cap, after which
 * ripgrep is stopped, so a query matching a whole tree costs no more than the cap; and for a time
 * at most, so a pattern that is slow on what it searches (`x{1000}{1000}` over a 10 MB line) ends
 * with what it found so far instead of never.
 * @module
 */
import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import { SvcError } from '../errors';
import { throwIfCancelled } from './context';

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
  /** Output went past `maxBytes`, or the time ran out, and ripgrep was stopped. */
  truncated: boolean;
  /** The time ran out (`timeLimitMs`) and ripgrep was stopped: the output is what it found until then. */
  timedOut: boolean;
}

export async function runRg(
  args: string[],
  options: {
    cwd: string;
    signal?: AbortSignal;
    maxBytes?: number;
    timeLimitMs?: number;
    /** The byte that ends a record (a NUL for `--files --null`): output cut short keeps whole ones. */
    recordEnd?: number;
  },
): Promise<RgResult> {
  throwIfCancelled(options.signal, 'the search');
  const maxBytes = options.maxBytes ?? 8 * 1024 * 1024;
  const recordEnd = options.recordEnd ?? 10;
  return new Promise<RgResult>((resolvePromise, reject) => {
    // Piped, ripgrep holds its output in a block buffer that a kill loses: with a time limit each
    // line is written as found, so a stopped search still has what it found.
    const child = startRg(
      options.timeLimitMs === undefined ? args : ['--line-buffered', ...args],
      options.cwd,
    );
    const chunks: Buffer[] = [];
    let bytes = 0;
    let truncated = false;
    let timedOut = false;
    let stderr = '';
    const onAbort = () => child.kill('SIGKILL');
    options.signal?.addEventListener('abort', onAbort, { once: true });
    const timer =
      options.timeLimitMs === undefined
        ? undefined
        : setTimeout(() => {
            timedOut = true;
            child.kill('SIGKILL');
          }, options.timeLimitMs);
    child.stdout.on('data', (chunk: Buffer) => {
      if (truncated) return;
      if (bytes + chunk.length > maxBytes) {
        // Keep whole records only: cut at the last record end that fits.
        const room = chunk.subarray(0, maxBytes - bytes);
        const cut = room.lastIndexOf(recordEnd);
        if (cut >= 0) chunks.push(room.subarray(0, cut + 1));
        truncated = true;
        child.kill('SIGKILL');
        return;
      }
      chunks.push(chunk);
      bytes += chunk.length;
    });
    child.stderr.on('data', (chunk: Buffer) => {
      if (stderr.length < 8192) stderr += chunk.toString();
    });
    child.on('error', (error) => {
      clearTimeout(timer);
      options.signal?.removeEventListener('abort', onAbort);
      reject(
        new SvcError(
          'unavailable',
          `ripgrep could not start (${error.message}); reinstall svc's dependencies`,
          {
            cause: error,
          },
        ),
      );
    });
    child.on('close', (code) => {
      clearTimeout(timer);
      options.signal?.removeEventListener('abort', onAbort);
      if (options.signal?.aborted) {
        reject(new SvcError('cancelled', 'the search was cancelled'));
        return;
      }
      let stdout = Buffer.concat(chunks);
      // Killed mid-write: keep whole records only, as at the byte cap.
      if (timedOut && !truncated) stdout = stdout.subarray(0, stdout.lastIndexOf(recordEnd) + 1);
      resolvePromise({
        stdout: stdout.toString('utf8'),
        stderr,
        code: truncated || timedOut ? 0 : code,
        truncated: truncated || timedOut,
        timedOut,
      });
    });
  });
}

/**
 * Spawn ripgrep. An argument list the system will not take (one argument over 128 KiB, all of them
 * over ARG_MAX) fails in `spawn` itself, synchronously, with E2BIG: that is the caller's input, and
 * says so, instead of an internal error.
 */
function startRg(args: string[], cwd: string) {
  try {
    return spawn(rgPath(), args, { cwd, stdio: ['ignore', 'pipe', 'pipe'] });
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
