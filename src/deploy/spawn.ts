/**
 * Start a detached `svc service start http` and wait until it serves: its output goes to a log
 * file (never a pipe, so it outlives us), the `svc: listening on <url>` line gives the URL, and
 * `GET /healthz` turning `ready` says the App is built. Also: is a pid still the service we
 * started, and stop it (SIGTERM, then SIGKILL after a grace period).
 * @module
 */
import { spawn } from 'node:child_process';
import { closeSync, existsSync, openSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { SvcError } from '../errors';
import { makeDirs } from '../util/make-dirs';

export interface StartedService {
  pid: number;
  url: string;
}

export interface StartOptions {
  argv: string[];
  env: Record<string, string | undefined>;
  cwd: string;
  logPath: string;
  readyTimeoutMs: number;
  fetch: typeof fetch;
  signal?: AbortSignal;
  /** Rewrite the listening URL (a remote target listening on 0.0.0.0 is reached by its host). */
  publicUrl?: (listening: string) => string;
  redact: (text: string) => string;
}

const LISTENING = /^svc: listening on (http:\/\/\S+)$/m;

export async function startDetached(options: StartOptions): Promise<StartedService> {
  makeDirs(dirname(options.logPath));
  const fd = openSync(options.logPath, 'a');
  const offset = existsSync(options.logPath) ? readFileSync(options.logPath).length : 0;
  let exited: { code: number | null; signal: string | null } | undefined;
  let spawnError: Error | undefined;
  const [command, ...args] = options.argv;
  const child = spawn(command, args, {
    cwd: options.cwd,
    env: Object.fromEntries(
      Object.entries(options.env).filter(([, value]) => value !== undefined),
    ) as NodeJS.ProcessEnv,
    detached: true,
    stdio: ['ignore', fd, fd],
  });
  closeSync(fd);
  child.on('error', (error) => {
    spawnError = error;
  });
  child.on('exit', (code, signal) => {
    exited = { code, signal };
  });
  child.unref();

  const deadline = Date.now() + options.readyTimeoutMs;
  const output = () => readFileSync(options.logPath, 'utf8').slice(offset);
  const fail = (why: string): never => {
    if (child.pid && !exited) killGroup(child.pid, 'SIGKILL');
    const tail = options.redact(output().split('\n').slice(-15).join('\n').trim());
    throw new SvcError(
      'unavailable',
      `the deployed service ${why}${tail ? `; its output ends with:\n${tail}` : ''}`,
    );
  };
  let url: string | undefined;
  while (!url) {
    if (spawnError) fail(`could not be started (${command}: ${spawnError.message})`);
    const match = LISTENING.exec(output());
    if (match) url = options.publicUrl ? options.publicUrl(match[1]) : match[1];
    else if (exited) fail(`exited (${exited.code ?? exited.signal}) before listening`);
    else if (Date.now() > deadline) fail(`did not listen within ${options.readyTimeoutMs / 1000}s`);
    else if (options.signal?.aborted) fail('start was cancelled');
    else await sleep(50);
  }
  while (true) {
    const health = await probeHealth(url, options.fetch, 2000);
    if (health.ready) break;
    if (exited) fail(`exited (${exited.code ?? exited.signal}) before it was ready`);
    if (Date.now() > deadline) fail(`was not ready within ${options.readyTimeoutMs / 1000}s`);
    if (options.signal?.aborted) fail('start was cancelled');
    await sleep(100);
  }
  if (!child.pid) fail('has no process id');
  return { pid: child.pid as number, url };
}

export interface Health {
  reachable: boolean;
  ready: boolean;
  version?: string;
  error?: string;
}

/** `GET /healthz` (the one unauthenticated route). */
export async function probeHealth(url: string, fetchImpl: typeof fetch, timeoutMs: number): Promise<Health> {
  try {
    const response = await fetchImpl(new URL('/healthz', url), { signal: AbortSignal.timeout(timeoutMs) });
    if (!response.ok) return { reachable: true, ready: false, error: `healthz answered ${response.status}` };
    const body = (await response.json()) as { ready?: unknown; version?: unknown };
    return {
      reachable: true,
      ready: body.ready === true,
      version: typeof body.version === 'string' ? body.version : undefined,
    };
  } catch (error) {
    return { reachable: false, ready: false, error: (error as Error).message };
  }
}

export function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * Whether `pid` still runs the service we started: its command line names the data dir we gave
 * it (pids are reused). Without /proc (not Linux) only liveness is known.
 */
export function isOurProcess(pid: number, marker: string): boolean {
  if (!pidAlive(pid)) return false;
  const cmdline = `/proc/${pid}/cmdline`;
  if (!existsSync('/proc/self/cmdline')) return true;
  try {
    return readFileSync(cmdline, 'utf8').split('\0').includes(marker);
  } catch {
    return false;
  }
}

/** SIGTERM (the server shuts down gracefully), then SIGKILL after `graceMs`. */
export async function stopProcess(pid: number, graceMs: number): Promise<'terminated' | 'killed' | 'gone'> {
  if (!pidAlive(pid)) return 'gone';
  killGroup(pid, 'SIGTERM');
  const deadline = Date.now() + graceMs;
  while (Date.now() < deadline) {
    if (!pidAlive(pid)) return 'terminated';
    await sleep(50);
  }
  killGroup(pid, 'SIGKILL');
  for (let i = 0; i < 40 && pidAlive(pid); i++) await sleep(25);
  return 'killed';
}

function killGroup(pid: number, signal: NodeJS.Signals) {
  // Detached: the service leads its own process group, so the group gets the signal.
  try {
    process.kill(-pid, signal);
  } catch {
    try {
      process.kill(pid, signal);
    } catch {
      // already gone
    }
  }
}

/**
 * How to run this same svc: the running bin (`dist/main.js`), else the build next to this module
 * (bundled chunks sit beside main.js; from sources it is ../../dist/main.js).
 */
export function selfCommand(argv1: string | undefined = process.argv[1]): string[] {
  const here = dirname(fileURLToPath(import.meta.url));
  const candidates = [
    argv1 && /(^|[\\/])(main\.js|svc)$/.test(argv1) ? resolve(argv1) : undefined,
    join(here, 'main.js'),
    resolve(here, '../../dist/main.js'),
  ];
  const found = candidates.find((candidate) => candidate && existsSync(candidate));
  if (!found) {
    throw new SvcError(
      'unavailable',
      'cannot find the svc binary to start; set [deploy] command = ["node", "/path/to/svc/dist/main.js"]',
    );
  }
  return [process.execPath, found];
}
