/**
 * Runs the built `dist/main.js` like a user would, with an isolated HOME and captured output.
 * @module
 */
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

export const BIN = resolve(__dirname, '../../dist/main.js');

export interface BinResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

export function runBin(
  args: string[],
  options: { cwd: string; env?: Record<string, string | undefined>; input?: string; timeoutMs?: number },
): Promise<BinResult> {
  if (!existsSync(BIN)) throw new Error(`${BIN} is missing: run npm run build (npm test does)`);
  return new Promise((resolvePromise, reject) => {
    const child = spawn(process.execPath, [BIN, ...args], {
      cwd: options.cwd,
      env: {
        PATH: process.env.PATH,
        HOME: join(options.cwd, '.home'),
        // Outside the workspace (readouts walk it): where the template database is kept.
        XDG_CACHE_HOME: join(tmpdir(), 'svc-test-cache'),
        ...options.env,
      } as NodeJS.ProcessEnv,
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    // A hang bound, under the suite's 60 s per test: a loaded CI box (load 12+ with three legs or
    // helpers' suites) has taken over 20 s for a three-step `svc run`. A kill says so in stderr,
    // so a failing test shows the bound, not just `code: null`.
    const bound = options.timeoutMs ?? 45_000;
    const timer = setTimeout(() => {
      stderr += `[runBin: svc killed after ${bound} ms]\n`;
      child.kill('SIGKILL');
    }, bound);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolvePromise({ code, stdout, stderr });
    });
    child.stdin.end(options.input ?? '');
  });
}
