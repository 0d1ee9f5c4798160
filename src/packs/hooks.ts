/**
 * Running one pack hook: a shell command in the workspace, with a minimal environment (never the
 * process's secrets), the event as JSON on stdin, and a timeout. The outcome is a status, an exit
 * code and a duration; the command and its output are never recorded.
 * @module
 */
import { spawn } from 'node:child_process';
import type { Redactor } from '../redact';

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
}): Promise<HookOutcome> {
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
    try {
      child = spawn(options.command, {
        cwd: options.cwd,
        env: options.env,
        shell: true,
        stdio: ['pipe', 'ignore', 'ignore'],
        // Own process group, so a timeout kills the shell and what it started.
        detached: process.platform !== 'win32',
        windowsHide: true,
      });
    } catch {
      resolve({ status: 'error', exit_code: null, duration_ms: 0 });
      return;
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
    // A hook that does not read stdin closes the pipe early: that is not a failure.
    child.stdin?.on('error', () => {});
    child.stdin?.end(options.stdin);
  });
}
