/**
 * Process lifecycle operations behind `autopilot_up`, `autopilot_down` and `daemon_restart`:
 * start `svc service start autopilot` in the background for this workspace and data dir, stop a
 * daemon gracefully (SIGTERM, wait for its exit), restart one, and the same on a remote deploy
 * target (`[deploy]`, TOOLS-29). A `service_processes` row is data, not a command: a pid is
 * signalled only while it is still the process that registered (its recorded start time and boot
 * id, ./daemons.ts), and a restart runs svc's own entry point with arguments rebuilt from the row's
 * kind, host and port (validated), never the row's stored argv.
 * @module
 */
import { execFile, spawn } from 'node:child_process';
import { existsSync, statSync } from 'node:fs';
import { basename, isAbsolute } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Config } from '../config/schema';
import { resolveTarget } from '../deploy/targets';
import { SvcError } from '../errors';
import type { Redactor } from '../redact';
import { checkIdentity, type DaemonKind, type DaemonRegistry, type DaemonView, pidAlive } from './daemons';
import type { ProcessTracker } from './process-tracker';

/** What the lifecycle operations read (a ToolHost satisfies it). */
export interface LifecycleHost {
  readonly daemons: Pick<DaemonRegistry, 'live' | 'get' | 'list'>;
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
    if (found && found.stopped_at === null && found.identity_check === 'mismatch') throw staleRow(found);
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
  if (options.daemonId) {
    const daemon = await requireLiveDaemon(host, options.daemonId, options.kind);
    await stopOne(daemon, options.signal);
    return { stopped: [{ id: daemon.id, pid: daemon.pid, url: daemon.url }], count: 1, not_signalled: [] };
  }
  const targets = await host.daemons.live(options.kind);
  const stale = (await host.daemons.list()).filter(
    (d) => d.identity_check === 'mismatch' && (!options.kind || d.kind === options.kind),
  );
  const notSignalled: { id: string; pid: number; reason: string }[] = stale.map((d) => ({
    id: d.id,
    pid: d.pid,
    reason: staleRow(d).message,
  }));
  const stopped: { id: string; pid: number; url: string | null }[] = [];
  for (const daemon of targets) {
    try {
      await stopOne(daemon, options.signal);
      stopped.push({ id: daemon.id, pid: daemon.pid, url: daemon.url });
    } catch (error) {
      if (!(SvcError.is(error) && error.code === 'conflict')) throw error;
      notSignalled.push({ id: daemon.id, pid: daemon.pid, reason: error.message });
    }
  }
  if (stopped.length === 0) {
    if (notSignalled.length) throw new SvcError('conflict', notSignalled.map((n) => n.reason).join('; '));
    throw new SvcError('not_found', `no live ${options.kind ?? 'service'} daemon in this data dir`);
  }
  return { stopped, count: stopped.length, not_signalled: notSignalled };
}

export async function restartDaemon(host: LifecycleHost, daemonId: string | undefined, signal?: AbortSignal) {
  const daemon = await requireLiveDaemon(host, daemonId);
  // Everything is checked before the running daemon is stopped.
  const plan = restartPlan(host, daemon);
  await stopOne(daemon, signal);
  const started = await spawnDaemon(host, plan.argv, plan.cwd, signal);
  return {
    restarted: daemon.id,
    kind: daemon.kind,
    previous_pid: daemon.pid,
    pid: started.pid,
    url: started.url,
  };
}

/** A hostname or IP literal: letters, digits, dots, hyphens, colons (IPv6), not an option. */
const HOST_PATTERN = /^(?!-)[A-Za-z0-9.:-]{1,253}$/;

/**
 * The restart command from the row's kind and listening address only: svc's own entry point
 * (process.execPath + SVC_BIN or this process's script), this workspace and data dir,
 * `service start <kind> --port <port> --host <host>`, and `--auth bearer|none` when the old
 * command had it. The row's cwd must be an existing directory.
 */
export function restartPlan(host: LifecycleHost, daemon: DaemonView): { argv: string[]; cwd: string } {
  const refuse = (why: string) =>
    new SvcError(
      'invalid_input',
      `daemon ${daemon.id}: ${why}; it was not restarted (start it again with svc service start ${daemon.kind === 'autopilot' ? 'autopilot' : 'http'})`,
    );
  if (daemon.kind !== 'http' && daemon.kind !== 'autopilot')
    throw refuse('its kind is not http or autopilot');
  let url: URL;
  try {
    url = new URL(daemon.url ?? '');
  } catch {
    throw refuse('it recorded no listening URL');
  }
  const hostname = url.hostname.replace(/^\[(.*)\]$/, '$1');
  const port = Number(url.port || (url.protocol === 'http:' ? 80 : Number.NaN));
  if (
    url.protocol !== 'http:' ||
    !HOST_PATTERN.test(hostname) ||
    !Number.isInteger(port) ||
    port < 1 ||
    port > 65535
  )
    throw refuse('its recorded URL is not http://<host>:<port>');
  const cwd = daemon.cwd ?? host.workspace;
  if (!isAbsolute(cwd) || !isDirectory(cwd))
    throw refuse(`its working directory ${cwd} is not an existing directory`);
  const auth = recordedAuth(daemon.argv);
  return {
    argv: [
      svcBin(host),
      '--cwd',
      host.workspace,
      '--data-dir',
      host.dataDir,
      'service',
      'start',
      daemon.kind,
      '--port',
      String(port),
      '--host',
      hostname,
      ...(auth ? ['--auth', auth] : []),
    ],
    cwd,
  };
}

function recordedAuth(argv: readonly string[]): 'bearer' | 'none' | undefined {
  for (let i = 0; i < argv.length; i++) {
    const value =
      argv[i] === '--auth' ? argv[i + 1] : argv[i]?.startsWith('--auth=') ? argv[i].slice(7) : undefined;
    if (value === 'bearer' || value === 'none') return value;
  }
  return undefined;
}

function isDirectory(path: string): boolean {
  try {
    return statSync(path).isDirectory();
  } catch {
    return false;
  }
}

function staleRow(daemon: DaemonView): SvcError {
  return new SvcError(
    'conflict',
    `daemon ${daemon.id}: pid ${daemon.pid} is no longer the process that registered it (it exited or the pid was reused); the row is stale and nothing was signalled`,
  );
}

async function stopOne(daemon: DaemonView, signal?: AbortSignal): Promise<void> {
  if (daemon.self) {
    throw new SvcError(
      'conflict',
      `daemon ${daemon.id} is this process; stop or restart it from another svc process (svc autopilot down, svc daemon restart)`,
    );
  }
  // Checked again right before the signal: the row may be minutes old.
  const check = checkIdentity(daemon.identity);
  if (check === 'mismatch') throw staleRow(daemon);
  if (check === 'unverifiable') {
    throw new SvcError(
      'conflict',
      `daemon ${daemon.id}: its row records no process identity (written by an older svc, or no /proc here), so svc cannot tell pid ${daemon.pid} is still that daemon and did not signal it; check with ps -o pid,lstart,args -p ${daemon.pid} and, if it is the svc daemon, stop it with kill ${daemon.pid} (a daemon started by this svc version can be stopped from svc)`,
    );
  }
  try {
    process.kill(daemon.pid, 'SIGTERM');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ESRCH') throw error;
  }
  const deadline = Date.now() + STOP_TIMEOUT_MS;
  while (pidAlive(daemon.pid) && checkIdentity(daemon.identity) === 'match') {
    if (Date.now() > deadline) {
      throw new SvcError(
        'timeout',
        `daemon ${daemon.id} (pid ${daemon.pid}) did not stop within ${STOP_TIMEOUT_MS / 1000}s`,
      );
    }
    await sleep(100, undefined, { signal });
  }
}

const OUTPUT_KEPT = 64 * 1024;
const kept = (text: string) => (text.length > OUTPUT_KEPT ? text.slice(-OUTPUT_KEPT) : text);

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
  // The last 64 KiB of each: the listening line is near the end, the error's tail at it.
  let stdout = '';
  let stderr = '';
  child.stdout?.on('data', (d) => (stdout = kept(stdout + d)));
  child.stderr?.on('data', (d) => (stderr = kept(stderr + d)));
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
            // Redacted whole, then cut: a secret cut in two is no longer the secret it knows.
            `the daemon exited (${code}) before listening: ${host.redactor.string(stderr.trim()).slice(-500)}`,
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
