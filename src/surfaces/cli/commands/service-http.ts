/**
 * `svc service start http` and `svc service start autopilot` (spec, CLI commands; GEN-03/04):
 * start the HTTP server, print one line `svc: listening on <url>` on stdout once it is ready (so
 * scripts can wait for it), and run until SIGINT or SIGTERM, then shut down gracefully and exit 0.
 * The token is never printed. Autopilot is the same server plus the autopilot worker
 * (`app.autopilotWorker`: due schedules, queued prompts). Both register in the data dir's service
 * registry (`app.daemons`) so `daemon_status` and the lifecycle tools find them.
 * @module
 */
import { resolve } from 'node:path';
import { type Command, Option } from 'commander';
import { SvcError } from '../../../errors';
import { capYoungGeneration, trimWhenIdle, tuneHeapForLongRunning, tuneMaglev } from '../../../util/heap';
import type { CliContext, CliRegistrar } from '../context';
import { ensureCommand } from '../tool-commands';

export interface ServiceOptions {
  host?: string;
  port?: string;
  token?: string;
  auth?: 'bearer' | 'none';
}

export const registerServiceHttp: CliRegistrar = (program, ctx) => {
  const http = ensureCommand(
    program,
    ['service', 'start', 'http'],
    'Start the HTTP server (session events over SSE, readout routes, /v1/openapi.json).',
  );
  addServerOptions(http).action((options: ServiceOptions) => runServer(ctx, 'http', options));

  const autopilot = ensureCommand(
    program,
    ['service', 'start', 'autopilot'],
    'Start the HTTP server plus the autopilot worker (due schedules, queued prompts) for unattended use.',
  );
  addServerOptions(autopilot).action((options: ServiceOptions) => runServer(ctx, 'autopilot', options));
};

function addServerOptions(command: Command): Command {
  return command
    .option('--host <host>', 'address to listen on (default [services.http].host, 127.0.0.1)')
    .option('--port <port>', 'port to listen on; 0 picks a free one (default [services.http].port, 7420)')
    .option(
      '--token <token>',
      'bearer token clients must send (default [services.http].token or env SVC_HTTP_TOKEN; never printed)',
    )
    .addOption(
      new Option(
        '--auth <mode>',
        'bearer: a bearer token is required (with no token configured every request gets 401); ' +
          'none: with no token configured, requests pass without one (loopback hosts only)',
      ).choices(['bearer', 'none']),
    );
}

/**
 * Runs the server until SIGINT/SIGTERM. `announce` prints what a person or script waits for once
 * it is ready (default: the `svc: listening on <url>` line; `svc web` adds the page's address).
 */
export async function runServer(
  ctx: CliContext,
  kind: 'http' | 'autopilot',
  options: ServiceOptions,
  announce: (url: string) => void = (url) => ctx.out(`svc: listening on ${url}`),
) {
  const port = parsePort(options.port);
  const globals = ctx.globals();
  const { loadConfig } = await import('../../../config/load');
  const { authMode, startHttpServer } = await import('../../http/server');
  // Config first (host, port, auth) so the socket listens before the App is built.
  const loaded = loadConfig({
    workspace: resolve(ctx.io.cwd, globals.cwd ?? '.'),
    env: ctx.io.env,
    configFile: globals.config,
    overrides: globals.c ?? [],
  });
  // issue 18: with `[store] url` naming PostgreSQL the App connects to it and migrates it as it is
  // built (a wrong URL is the error shown at start) and serves from it; svc.db is never opened.
  ctx.keepAlive = true;
  tuneHeapForLongRunning(ctx.io.env);
  tuneMaglev(ctx.io.env);
  const youngCap = capYoungGeneration(ctx.io.env);
  // When quiet, SQLite's page cache (up to 4 MB a connection: `cache_size` in src/store/db.ts;
  // filled a little more by every request as the database grows) goes back too: `shrink_memory`
  // frees the pages no statement is using.
  let releaseStore = () => {};
  const stopTrimming = trimWhenIdle(10_000, () => releaseStore());
  const handle = await startHttpServer({
    config: loaded.config,
    flags: { host: options.host, port, token: options.token, auth: options.auth },
    createApp: () => ctx.app({ eagerDb: true, durableRuns: true }),
    worker: kind === 'autopilot' ? (app) => app.autopilotWorker : undefined,
  });
  // The data dir's service registry: the CLI and the lifecycle tools find this daemon there.
  const app = handle.app;
  releaseStore = () => {
    if (app.store.kind === 'sqlite' && app.hasDb()) app.db.pragma('shrink_memory');
  };
  let daemon: Awaited<ReturnType<typeof app.daemons.register>>;
  try {
    daemon = await app.daemons.register({
      kind,
      url: handle.url,
      argv: process.argv.slice(1),
      cwd: ctx.io.cwd,
      worker: kind === 'autopilot' ? 'autopilot' : null,
    });
  } catch (error) {
    // A server that cannot register does not stay up half-started: it stops, and the error shows.
    stopTrimming();
    youngCap?.stop();
    await handle.close('start failed');
    ctx.keepAlive = false;
    throw error;
  }
  const beat = async () => {
    try {
      await app.daemons.heartbeat(daemon.id, {
        open_streams: handle.streams.size,
        active_runs: app.agent.active().length,
        ...(kind === 'autopilot' ? { autopilot: app.autopilot.state } : {}),
      });
    } catch (error) {
      app.log.warn('daemon heartbeat failed', { error });
    }
  };
  const heartbeat = setInterval(() => void beat(), 10_000);
  heartbeat.unref();
  if (
    authMode(handle.settings, { auth: options.auth, token: options.token }, handle.app.config) === 'closed'
  ) {
    ctx.io.stderr.write(
      'svc: warning: no token configured and --auth bearer: every protected request gets 401 ' +
        '(set --token, [services.http].token or SVC_HTTP_TOKEN, or use --auth none on loopback)\n',
    );
  }
  // The SIGTERM listener goes in before the listening line: a supervisor (or a test) may send
  // SIGTERM the moment it reads that line, and with no listener yet the signal's default action
  // ends the process there, its shutdown (the daemon and cluster node rows) never run.
  const stop = waitForStop(ctx);
  announce(handle.url);

  const reason = await stop;
  ctx.io.stderr.write(`svc: shutting down (${reason})\n`);
  clearInterval(heartbeat);
  stopTrimming();
  youngCap?.stop();
  try {
    await app.daemons.stopped(daemon.id, reason);
  } catch (error) {
    app.log.warn('daemon stop record failed', { error });
  }
  await handle.close(reason);
}

/** Resolves on SIGINT (main.ts aborts io.signal) or SIGTERM; listeners are removed after. */
function waitForStop(ctx: CliContext): Promise<string> {
  return new Promise((resolvePromise) => {
    const signal = ctx.io.signal;
    const done = (reason: string) => {
      signal?.removeEventListener('abort', onAbort);
      process.off('SIGTERM', onTerm);
      resolvePromise(reason);
    };
    const onAbort = () => done('SIGINT');
    const onTerm = () => done('SIGTERM');
    if (signal?.aborted) return done('SIGINT');
    signal?.addEventListener('abort', onAbort, { once: true });
    process.once('SIGTERM', onTerm);
  });
}

function parsePort(value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const port = Number(value);
  if (!/^\d+$/.test(value.trim()) || !Number.isInteger(port) || port > 65535) {
    throw new SvcError('invalid_input', `--port: expected an integer 0-65535, got ${JSON.stringify(value)}`);
  }
  return port;
}
