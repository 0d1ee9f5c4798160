/**
 * Spawns the built `svc service start …` like a user or a script would: waits for the
 * `svc: listening on <url>` line, and exposes the process for signals and its exit.
 * @module
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { onTestFinished } from 'vitest';
import { BIN } from '../helpers/run-bin';

export interface SpawnedServer {
  child: ChildProcess;
  stdout(): string;
  stderr(): string;
  /** Resolves with the URL from the listening line, or rejects with the output on exit/timeout. */
  ready: Promise<string>;
  /** Resolves with the exit code (null when killed by a signal). */
  exit: Promise<number | null>;
}

export function spawnServer(
  args: string[],
  options: { cwd: string; env?: Record<string, string | undefined>; timeoutMs?: number },
): SpawnedServer {
  if (!existsSync(BIN)) throw new Error(`${BIN} is missing: run npm run build (npm test does)`);
  const child = spawn(process.execPath, [BIN, ...args], {
    cwd: options.cwd,
    env: {
      PATH: process.env.PATH,
      HOME: join(options.cwd, '.home'),
      XDG_CONFIG_HOME: join(options.cwd, '.home', '.config'),
      ...options.env,
    } as NodeJS.ProcessEnv,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout?.on('data', (d) => (stdout += d));
  child.stderr?.on('data', (d) => (stderr += d));
  const killer = setTimeout(() => child.kill('SIGKILL'), options.timeoutMs ?? 20_000);
  const exit = new Promise<number | null>((resolve) => {
    child.on('close', (code) => {
      clearTimeout(killer);
      resolve(code);
    });
  });
  const ready = new Promise<string>((resolve, reject) => {
    const check = () => {
      const match = /^svc: listening on (http:\/\/\S+)$/m.exec(stdout);
      if (match) resolve(match[1]);
    };
    child.stdout?.on('data', check);
    void exit.then((code) =>
      reject(new Error(`server exited (${code}) before listening\nstdout: ${stdout}\nstderr: ${stderr}`)),
    );
  });
  ready.catch(() => {});
  try {
    onTestFinished(() => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    });
  } catch {
    // Started outside a test (beforeAll): the caller stops it.
  }
  return { child, stdout: () => stdout, stderr: () => stderr, ready, exit };
}
