/**
 * Process lifecycle operations behind `autopilot_up`, `autopilot_down` and `daemon_restart`:
 * start `svc service start autopilot` in the background for this workspace and data dir, stop a
 * daemon gracefully (SIGTERM, wait for its exit), restart one with its own recorded arguments,
 * and the same on a remote svc server (`[deploy]`, TOOLS-29).
 * @module
 */
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { basename } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { App } from '../app';
import { SvcError } from '../errors';
import { type DaemonKind, type DaemonView, pidAlive } from './daemons';

const START_TIMEOUT_MS = 20_000;
const STOP_TIMEOUT_MS = 15_000;

export function requireLiveDaemon(app: App, daemonId: string | undefined, kind?: DaemonKind): DaemonView {
  const live = app.daemons.live(kind);
  if (daemonId) {
    const found = app.daemons.get(daemonId);
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
function svcBin(app: App): string {
  const bin = app.env.SVC_BIN || process.argv[1];
  if (!bin || !existsSync(bin) || (!app.env.SVC_BIN && !/^main\.(m?js)$/.test(basename(bin)))) {
    throw new SvcError(
      'unavailable',
      'cannot find the svc executable to start a daemon from this process; set SVC_BIN to the path of svc (dist/main.js)',
    );
  }
  return bin;
}

export async function startAutopilot(
  app: App,
  options: { port: number; host: string; signal?: AbortSignal },
) {
  const live = app.daemons.live('autopilot');
  if (live.length) {
    throw new SvcError(
      'conflict',
      `an autopilot is already running for this data dir (pid ${live[0].pid}, ${live[0].url ?? 'no url'}); see autopilot_status`,
    );
  }
  const argv = [
    svcBin(app),
    '--cwd',
    app.workspace,
    '--data-dir',
    app.dataDir,
    'service',
    'start',
    'autopilot',
    '--port',
    String(options.port),
    '--host',
    options.host,
  ];
  const started = await spawnDaemon(app, argv, app.workspace, options.signal);
  return { started: true, kind: 'autopilot', pid: started.pid, url: started.url };
}

export async function stopDaemons(
  app: App,
  options: { kind?: DaemonKind; daemonId?: string; signal?: AbortSignal },
) {
  const targets = options.daemonId
    ? [requireLiveDaemon(app, options.daemonId, options.kind)]
    : app.daemons.live(options.kind);
  if (targets.length === 0)
    throw new SvcError('not_found', `no live ${options.kind ?? 'service'} daemon in this data dir`);
  const stopped: { id: string; pid: number; url: string | null }[] = [];
  for (const daemon of targets) {
    await stopOne(daemon, options.signal);
    stopped.push({ id: daemon.id, pid: daemon.pid, url: daemon.url });
  }
  return { stopped, count: stopped.length };
}

export async function restartDaemon(app: App, daemonId: string | undefined, signal?: AbortSignal) {
  const daemon = requireLiveDaemon(app, daemonId);
  if (daemon.argv.length === 0)
    throw new SvcError('unavailable', `daemon ${daemon.id} recorded no arguments to restart with`);
  await stopOne(daemon, signal);
  const started = await spawnDaemon(app, daemon.argv, daemon.cwd ?? app.workspace, signal);
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
  app: App,
  argv: string[],
  cwd: string,
  signal?: AbortSignal,
): Promise<{ pid: number; url: string }> {
  const child = spawn(process.execPath, argv, {
    cwd,
    env: app.env as NodeJS.ProcessEnv,
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  if (child.pid === undefined) throw new SvcError('unavailable', 'could not start the daemon process');
  const handle = app.processes.register({ pid: child.pid, kind: 'daemon', label: argv.slice(1).join(' ') });
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
            `the daemon exited (${code}) before listening: ${app.redactor.string(stderr.trim().slice(-500))}`,
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

/** A lifecycle operation on a remote svc server: needs `[deploy] enabled` and the target (TOOLS-29). */
export async function remoteLifecycle(
  app: App,
  target: string,
  route: string,
  body: Record<string, unknown>,
  signal?: AbortSignal,
) {
  const deploy = app.config.deploy;
  if (!deploy.enabled) {
    throw new SvcError(
      'forbidden',
      `target: remote lifecycle operations need deploy configuration: set [deploy] enabled = true and [deploy.targets.${target}] url = "…"`,
    );
  }
  const entry = deploy.targets[target];
  if (!entry) {
    const known = Object.keys(deploy.targets);
    throw new SvcError(
      'not_found',
      `target: no deploy target "${target}"${known.length ? `; configured: ${known.join(', ')}` : '; add [deploy.targets.<name>] url = "…"'}`,
    );
  }
  const [method, path] = route.split(' ');
  const url = `${entry.url.replace(/\/+$/, '')}${path}`;
  let response: Response;
  try {
    response = await app.fetch(url, {
      method,
      headers: {
        'content-type': 'application/json',
        ...(entry.token ? { authorization: `Bearer ${entry.token}` } : {}),
      },
      body: JSON.stringify(Object.fromEntries(Object.entries(body).filter(([, v]) => v !== undefined))),
      signal: signal ? AbortSignal.any([signal, AbortSignal.timeout(60_000)]) : AbortSignal.timeout(60_000),
    });
  } catch (error) {
    throw new SvcError(
      'unavailable',
      `target ${target}: ${entry.url} did not answer: ${(error as Error).message}`,
    );
  }
  const text = await response.text();
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    json = text;
  }
  if (!response.ok) {
    const message = (json as { error?: { message?: string } })?.error?.message ?? String(text).slice(0, 200);
    throw new SvcError('unavailable', `target ${target} answered ${response.status}: ${message}`);
  }
  return { target, url: entry.url, remote: json };
}
