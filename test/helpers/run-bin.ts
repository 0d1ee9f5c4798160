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
    const timer = setTimeout(() => child.kill('SIGKILL'), options.timeoutMs ?? 20_000);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolvePromise({ code, stdout, stderr });
    });
    child.stdin.end(options.input ?? '');
  });
}
