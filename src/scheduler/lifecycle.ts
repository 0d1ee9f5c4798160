/**
 * Process lifecycle operations behind `autopilot_up`, `autopilot_down` and `daemon_restart`:
 * start `svc service start autopilot` in the background for this workspace and data dir, stop a
 * daemon gracefully (SIGTERM, wait for its exit), restart one with its own recorded arguments,
 * and the same on a remote deploy target (`[deploy]`, TOOLS-29).
 * @module
 */
import { execFile, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { basename } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Config } from '../config/schema';
import { resolveTarget } from '../deploy/targets';
import { SvcError } from '../errors';
import type { Redactor } from '../redact';
import { type DaemonKind, type DaemonRegistry, type DaemonView, pidAlive } from './daemons';
import type { ProcessTracker } from './process-tracker';

/** What the lifecycle operations read (a ToolHost satisfies it). */
export interface LifecycleHost {
  readonly daemons: Pick<DaemonRegistry, 'live' | 'get'>;
  readonly processes: Pick<ProcessTracker, 'register'>;
  readonly workspace: string;
  readonly dataDir: string;
  readonly env: Readonly<Record<string, string | undefined>>;
  readonly config: Config;
  readonly redactor: Redactor;
}

const START_TIMEOUT_MS = 20_000;
const STOP_TIMEOUT_MS = 15_000;

export async function requireLiveDaemon(
  host: LifecycleHost,
  daemonId: string | undefined,
  kind?: DaemonKind,
): Promise<DaemonView> {
  const live = await host.daemons.live(kind);
  if (daemonId) {
    const found = await host.daemons.get(daemonId);
    if (!found?.alive || (kind && found.kind !== kind)) {
      throw new SvcError(
        'not_found',
        `daemon_id: no live ${kind ?? ''} daemon "${daemonId}"; see daemon_status`.replace('  ', ' '),
      );
    }
    return found;
  }
  if (live.length === 0)
    throw new SvcError(
      'not_found',
      `no live ${kind ?? 'service'} daemon in this data dir; see daemon_status`,
    );
  if (live.length > 1) {
    throw new SvcError(
      'invalid_input',
      `daemon_id: ${live.length} daemons are live (${live.map((d) => d.id).join(', ')}); name one`,
    );
  }
  return live[0];
}

/** The svc entry script to start daemons with: env SVC_BIN, else this process's own script. */
function svcBin(host: LifecycleHost): string {
  const bin = host.env.SVC_BIN || process.argv[1];
  if (!bin || !existsSync(bin) || (!host.env.SVC_BIN && !/^main\.(m?js)$/.test(basename(bin)))) {
    throw new SvcError(
      'unavailable',
      'cannot find the svc executable to start a daemon from this process; set SVC_BIN to the path of svc (dist/main.js)',
    );
  }
  return bin;
}

export async function startAutopilot(
  host: LifecycleHost,
  options: { port: number; host: string; signal?: AbortSignal },
) {
  const live = await host.daemons.live('autopilot');
  if (live.length) {
    throw new SvcError(
      'conflict',
      `an autopilot is already running for this data dir (pid ${live[0].pid}, ${live[0].url ?? 'no url'}); see autopilot_status`,
    );
  }
  const argv = [
    svcBin(host),
    '--cwd',
    host.workspace,
    '--data-dir',
    host.dataDir,
    'service',
    'start',
    'autopilot',
    '--port',
    String(options.port),
    '--host',
    options.host,
  ];
  const started = await spawnDaemon(host, argv, host.workspace, options.signal);
  return { started: true, kind: 'autopilot', pid: started.pid, url: started.url };
}

export async function stopDaemons(
  host: LifecycleHost,
  options: { kind?: DaemonKind; daemonId?: string; signal?: AbortSignal },
) {
  const targets = options.daemonId
    ? [await requireLiveDaemon(host, options.daemonId, options.kind)]
    : await host.daemons.live(options.kind);
  if (targets.length === 0)
    throw new SvcError('not_found', `no live ${options.kind ?? 'service'} daemon in this data dir`);
  const stopped: { id: string; pid: number; url: string | null }[] = [];
  for (const daemon of targets) {
    await stopOne(daemon, options.signal);
    stopped.push({ id: daemon.id, pid: daemon.pid, url: daemon.url });
  }
  return { stopped, count: stopped.length };
}

export async function restartDaemon(host: LifecycleHost, daemonId: string | undefined, signal?: AbortSignal) {
  const daemon = await requireLiveDaemon(host, daemonId);
  if (daemon.argv.length === 0)
    throw new SvcError('unavailable', `daemon ${daemon.id} recorded no arguments to restart with`);
  await stopOne(daemon, signal);
  const started = await spawnDaemon(host, daemon.argv, daemon.cwd ?? host.workspace, signal);
  return {
    restarted: daemon.id,
    kind: daemon.kind,
    previous_pid: daemon.pid,
    pid: started.pid,
    url: started.url,
  };
}

async function stopOne(daemon: DaemonView, signal?: AbortSignal): Promise<void> {
  if (daemon.self) {
    throw new SvcError(
      'conflict',
      `daemon ${daemon.id} is this process; stop or restart it from another svc process (svc autopilot down, svc daemon restart)`,
    );
  }
  try {
    process.kill(daemon.pid, 'SIGTERM');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ESRCH') throw error;
  }
  const deadline = Date.now() + STOP_TIMEOUT_MS;
  while (pidAlive(daemon.pid)) {
    if (Date.now() > deadline) {
      throw new SvcError(
        'timeout',
        `daemon ${daemon.id} (pid ${daemon.pid}) did not stop within ${STOP_TIMEOUT_MS / 1000}s`,
      );
    }
    await sleep(100, undefined, { signal });
  }
}

async function spawnDaemon(
  host: LifecycleHost,
  argv: string[],
  cwd: string,
  signal?: AbortSignal,
): Promise<{ pid: number; url: string }> {
  const child = spawn(process.execPath, argv, {
    cwd,
    env: host.env as NodeJS.ProcessEnv,
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  if (child.pid === undefined) throw new SvcError('unavailable', 'could not start the daemon process');
  const handle = host.processes.register({ pid: child.pid, kind: 'daemon', label: argv.slice(1).join(' ') });
  child.on('exit', () => handle.exited());
  let stdout = '';
  let stderr = '';
  child.stdout?.on('data', (d) => (stdout += d));
  child.stderr?.on('data', (d) => (stderr += d));
  try {
    const url = await new Promise<string>((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new SvcError('timeout', 'the daemon did not start listening in time')),
        START_TIMEOUT_MS,
      );
      const check = () => {
        const match = /^svc: listening on (http:\/\/\S+)$/m.exec(stdout);
        if (match) {
          clearTimeout(timer);
          resolve(match[1]);
        }
      };
      child.stdout?.on('data', check);
      child.once('exit', (code) => {
        clearTimeout(timer);
        reject(
          new SvcError(
            'unavailable',
            `the daemon exited (${code}) before listening: ${host.redactor.string(stderr.trim().slice(-500))}`,
          ),
        );
      });
      signal?.addEventListener(
        'abort',
        () => reject(new SvcError('cancelled', 'stopped waiting for the daemon')),
        { once: true },
      );
    });
    return { pid: child.pid, url };
  } finally {
    // Detach: the daemon outlives this process; its own log is in the data dir.
    child.stdout?.destroy();
    child.stderr?.destroy();
    child.unref();
  }
}

/**
 * A lifecycle operation on a remote deploy target (TOOLS-29): refused unless `[deploy] enabled`
 * and `[deploy.targets.<name>]` exist (`resolveTarget`). It runs the same svc command there through
 * the target's command prefix (e.g. `ssh build-box`): `svc --cwd <workspace> <command> --json`,
 * with `SVC_ENABLE_PROCESS_LIFECYCLE_TOOLS=1` set for that command, and returns its JSON.
 */
export async function remoteLifecycle(
  host: LifecycleHost,
  targetName: string,
  command: string[],
  signal?: AbortSignal,
) {
  const target = resolveTarget(host.config, targetName, { workspace: host.workspace, dataDir: host.dataDir });
  if (target.local) {
    throw new SvcError('invalid_input', 'target: "local" is this machine; omit target for a local operation');
  }
  const argv = [
    ...target.prefix,
    'env',
    'SVC_ENABLE_PROCESS_LIFECYCLE_TOOLS=1',
    ...target.svcCommand,
    '--cwd',
    target.workspace,
    ...command,
    '--json',
  ];
  const [file, ...args] = argv;
  const result = await new Promise<{ code: number | null; stdout: string; stderr: string }>(
    (resolvePromise) => {
      execFile(
        file,
        args,
        { env: host.env as NodeJS.ProcessEnv, timeout: 120_000, signal, maxBuffer: 4 * 1024 * 1024 },
        (error, stdout, stderr) =>
          resolvePromise({
            code: error
              ? typeof (error as { code?: unknown }).code === 'number'
                ? (error as { code: number }).code
                : 1
              : 0,
            stdout: String(stdout),
            stderr: String(stderr),
          }),
      );
    },
  );
  if (result.code !== 0) {
    const line = host.redactor.string(result.stderr.trim().split('\n').at(-1) ?? '');
    throw new SvcError(
      'unavailable',
      `target ${targetName}: ${command.join(' ')} failed (exit ${result.code}): ${line}`,
    );
  }
  let remote: unknown;
  try {
    remote = JSON.parse(result.stdout);
  } catch {
    throw new SvcError('unavailable', `target ${targetName}: ${command.join(' ')} did not print JSON`);
  }
  return {
    target: targetName,
    host: target.host,
    command: command.join(' '),
    remote: host.redactor.value(remote),
  };
}
