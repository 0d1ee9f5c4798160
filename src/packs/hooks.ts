/**
 * Running one pack hook: a shell command in the workspace, with a minimal environment (never the
 * process's secrets), the event as JSON on stdin, and a timeout. The outcome is a status, an exit
 * code and a duration; the command and its output are never recorded. With the App's command
 * spawner (src/sandbox/spawn.ts) the hook runs like every command svc starts: inside the OS
 * sandbox when it is active, with the scrubbed environment.
 * @module
 */
import { spawn } from 'node:child_process';
import type { Redactor } from '../redact';
import type { CommandSpawner } from '../sandbox/spawn';
import { closeStdinFile, stdinFile } from '../util/stdin-file';

export interface HookOutcome {
  status: 'ok' | 'failed' | 'timeout' | 'error';
  exit_code: number | null;
  duration_ms: number;
}

/** Variables a hook inherits from the process, by name: enough to find tools, nothing secret. */
const INHERITED = [
  'PATH',
  'HOME',
  'USER',
  'LOGNAME',
  'LANG',
  'LC_ALL',
  'LC_CTYPE',
  'TERM',
  'TMPDIR',
  'TZ',
  'SHELL',
  'SYSTEMROOT',
  'COMSPEC',
  'PATHEXT',
  'WINDIR',
];

/** The hook environment: inherited basics (minus anything the redactor knows as a secret) and SVC_* context. */
export function hookEnv(
  processEnv: Readonly<Record<string, string | undefined>>,
  context: Record<string, string>,
  redactor: Redactor,
): Record<string, string> {
  const env: Record<string, string> = {};
  for (const name of INHERITED) {
    const value = processEnv[name];
    if (value !== undefined && redactor.string(value) === value) env[name] = value;
  }
  return { ...env, ...context };
}

export function runHookCommand(options: {
  command: string;
  cwd: string;
  env: Record<string, string>;
  stdin: string;
  timeoutMs: number;
  signal?: AbortSignal;
  /** Start it through the App's spawner: `context` are svc's variables, `runId` the ledger's run. */
  spawner?: CommandSpawner;
  context?: Record<string, string>;
  runId?: string;
  label?: string;
}): Promise<HookOutcome> {
  if (options.spawner) return runSpawned(options.spawner, options);
  const started = performance.now();
  return new Promise((resolve) => {
    let settled = false;
    let killed: 'timeout' | 'abort' | undefined;
    const finish = (outcome: Omit<HookOutcome, 'duration_ms'>) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      options.signal?.removeEventListener('abort', onAbort);
      resolve({ ...outcome, duration_ms: Math.round(performance.now() - started) });
    };
    let child: ReturnType<typeof spawn>;
    // The event as a file, not a socket: a hook's bash would source ~/.bashrc (../util/stdin-file.ts).
    const input = stdinFile(options.stdin);
    try {
      child = spawn(options.command, {
        cwd: options.cwd,
        env: options.env,
        shell: true,
        stdio: [input ?? 'pipe', 'ignore', 'ignore'],
        // Own process group, so a timeout kills the shell and what it started.
        detached: process.platform !== 'win32',
        windowsHide: true,
      });
    } catch {
      resolve({ status: 'error', exit_code: null, duration_ms: 0 });
      return;
    } finally {
      closeStdinFile(input);
    }
    const kill = () => {
      try {
        if (child.pid !== undefined && process.platform !== 'win32') process.kill(-child.pid, 'SIGKILL');
        else child.kill('SIGKILL');
      } catch {
        // already gone
      }
    };
    const timer = setTimeout(() => {
      killed = 'timeout';
      kill();
    }, options.timeoutMs);
    // Shutdown: the hook is stopped, which is neither its failure nor a timeout.
    const onAbort = () => {
      killed = 'abort';
      kill();
    };
    options.signal?.addEventListener('abort', onAbort, { once: true });
    child.on('error', () => finish({ status: 'error', exit_code: null }));
    child.on('close', (code) => {
      if (killed) finish({ status: killed === 'timeout' ? 'timeout' : 'error', exit_code: code });
      else finish({ status: code === 0 ? 'ok' : 'failed', exit_code: code });
    });
    if (input === undefined) {
      // A hook that does not read stdin closes the pipe early: that is not a failure.
      child.stdin?.on('error', () => {});
      child.stdin?.end(options.stdin);
    }
  });
}

async function runSpawned(
  spawner: CommandSpawner,
  options: Parameters<typeof runHookCommand>[0],
): Promise<HookOutcome> {
  const started = performance.now();
  const elapsed = () => Math.round(performance.now() - started);
  let proc: ReturnType<CommandSpawner['spawn']>;
  try {
    proc = spawner.spawn({
      script: options.command,
      cwd: options.cwd,
      vars: options.context,
      stdin: options.stdin,
      shell: '/bin/sh',
      runId: options.runId,
      kind: 'hook',
      label: options.label ?? 'pack hook',
    });
  } catch {
    // The sandbox cannot run (mode bwrap without bubblewrap): the hook did not run.
    return { status: 'error', exit_code: null, duration_ms: 0 };
  }
  let killed: 'timeout' | 'abort' | undefined;
  const timer = setTimeout(() => {
    killed = 'timeout';
    proc.reap();
  }, options.timeoutMs);
  // Shutdown: the hook is stopped, which is neither its failure nor a timeout.
  const onAbort = () => {
    killed = 'abort';
    proc.reap();
  };
  options.signal?.addEventListener('abort', onAbort, { once: true });
  let spawnFailed = false;
  proc.child.once('error', () => {
    spawnFailed = true;
  });
  try {
    const exit = await proc.exited;
    if (spawnFailed) return { status: 'error', exit_code: null, duration_ms: elapsed() };
    if (killed)
      return {
        status: killed === 'timeout' ? 'timeout' : 'error',
        exit_code: exit.code,
        duration_ms: elapsed(),
      };
    return { status: exit.code === 0 ? 'ok' : 'failed', exit_code: exit.code, duration_ms: elapsed() };
  } finally {
    clearTimeout(timer);
    options.signal?.removeEventListener('abort', onAbort);
    proc.reap();
  }
}
