/**
 * ripgrep, from the `@vscode/ripgrep` package (the binary ships inside the npm package; nothing is
 * downloaded), with `rg` on PATH as the fallback. Output is collected up to a byte cap, after which
 * ripgrep is stopped, so a query matching a whole tree costs no more than the cap.
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
  /** Output went past `maxBytes` and ripgrep was stopped. */
  truncated: boolean;
}

export async function runRg(
  args: string[],
  options: { cwd: string; signal?: AbortSignal; maxBytes?: number },
): Promise<RgResult> {
  throwIfCancelled(options.signal, 'the search');
  const maxBytes = options.maxBytes ?? 8 * 1024 * 1024;
  return new Promise<RgResult>((resolvePromise, reject) => {
    const child = spawn(rgPath(), args, { cwd: options.cwd, stdio: ['ignore', 'pipe', 'pipe'] });
    const chunks: Buffer[] = [];
    let bytes = 0;
    let truncated = false;
    let stderr = '';
    const onAbort = () => child.kill('SIGKILL');
    options.signal?.addEventListener('abort', onAbort, { once: true });
    child.stdout.on('data', (chunk: Buffer) => {
      if (truncated) return;
      if (bytes + chunk.length > maxBytes) {
        // Keep whole lines only: cut at the last newline that fits.
        const room = chunk.subarray(0, maxBytes - bytes);
        const cut = room.lastIndexOf(10);
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
      options.signal?.removeEventListener('abort', onAbort);
      if (options.signal?.aborted) {
        reject(new SvcError('cancelled', 'the search was cancelled'));
        return;
      }
      resolvePromise({
        stdout: Buffer.concat(chunks).toString('utf8'),
        stderr,
        code: truncated ? 0 : code,
        truncated,
      });
    });
  });
}
