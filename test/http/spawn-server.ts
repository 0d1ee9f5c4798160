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

/** How long a listening server nobody stopped is left running (the net, not a test's bound). */
const UNSTOPPED_SERVER_MS = 20 * 60_000;

export function spawnServer(
  args: string[],
  options: { cwd: string; env?: Record<string, string | undefined>; timeoutMs?: number; bin?: string },
): SpawnedServer {
  if (!existsSync(BIN)) throw new Error(`${BIN} is missing: run npm run build (npm test does)`);
  // `bin`: another entry (bin/svc.cjs, the installed command), dist/main.js by default.
  const child = spawn(process.execPath, [options.bin ?? BIN, ...args], {
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
  // `timeoutMs` bounds the wait for the listening line. Once listening, the server lives until its
  // test (onTestFinished below) or its file's afterAll stops it, with a long net for one nobody
  // stopped: a lifetime of `timeoutMs` killed servers (a cluster's nodes after 180 s) under files
  // that ran longer on a loaded box.
  let killer = setTimeout(() => child.kill('SIGKILL'), options.timeoutMs ?? 20_000);
  const exit = new Promise<number | null>((resolve) => {
    child.on('close', (code) => {
      clearTimeout(killer);
      resolve(code);
    });
  });
  const ready = new Promise<string>((resolve, reject) => {
    const check = () => {
      const match = /^svc: listening on (http:\/\/\S+)$/m.exec(stdout);
      if (!match) return;
      clearTimeout(killer);
      killer = setTimeout(() => child.kill('SIGKILL'), UNSTOPPED_SERVER_MS);
      killer.unref();
      resolve(match[1]);
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
