/**
 * The HTTP server process (`svc service start http|autopilot`): listen first, then build the App
 * and load what its first requests would (protected routes answer 503 `App not ready`
 * meanwhile), then mark it ready. Shutdown is
 * graceful and runs once: refuse new requests, end SSE streams, stop the worker, let in-flight
 * requests finish (bounded), then `app.close()` — whose teardown hooks mark active runs
 * interrupted (the agent layer registers one with `app.onClose`) — which closes the database.
 * @module
 */
import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import { getRequestListener } from '@hono/node-server';
import type { App, BackgroundWorker } from '../../app';
import { warmService } from '../../app/warm';
import type { Config } from '../../config/schema';
import { SvcError } from '../../errors';
import { enableGroupCommit } from '../../store/db';
import { isLoopbackHost } from './auth';
import { type BodyGuard, createBodyGuard } from './body-guard';
import { connectionOptions, limitConnections } from './connection-limits';
import { rawErrorAnswer, serveEventSockets } from './event-socket';
import { createHttpService, errorStyleFor, type HttpAppOptions, type NodeRoute } from './index';
import { markSessionPublisher } from './session-events';
import { createStreamTracker, type StreamTracker } from './sse';

/** How long an idle keep-alive connection is kept open (ms). */
const KEEP_ALIVE_MS = 65_000;

export type AuthMode = 'bearer' | 'none';

export interface HttpServerFlags {
  host?: string;
  port?: number;
  /** `--token`: wins over `[services.http].token` and `SVC_HTTP_TOKEN`. */
  token?: string;
  /** `--auth`: wins over `[services.http].allow_no_auth`. */
  auth?: AuthMode;
}

export interface HttpSettings {
  host: string;
  port: number;
  /** Where the token comes from (never the token itself). */
  tokenSource: 'flag' | 'config' | 'none';
  loopback: boolean;
}

export interface StartHttpServerOptions {
  /** Config read before the App exists (the same sources), for host, port and auth. */
  config: Config;
  flags?: HttpServerFlags;
  /** Builds the App once the socket listens. */
  createApp: () => Promise<App>;
  /** The worker to run once ready (autopilot); stopped before the App closes. */
  worker?: (app: App) => BackgroundWorker | undefined;
  /** Called once the socket listens, before the App is built (routes answer 503 until ready). */
  onListening?: (url: string) => void;
  /** How long in-flight requests may take to finish at shutdown. */
  graceMs?: number;
  /** Passed through to createHttpApp (tests: heartbeat, extension routes). */
  http?: Pick<HttpAppOptions, 'sseHeartbeatMs' | 'sseRetryMs' | 'extensions' | 'extend' | 'tools'>;
}

export interface HttpServerHandle {
  readonly url: string;
  readonly host: string;
  readonly port: number;
  readonly app: App;
  readonly settings: HttpSettings;
  /** The open SSE streams (ended at shutdown). */
  readonly streams: StreamTracker;
  /** Bytes of the request bodies being received now (`max_body_bytes_in_flight`, body-guard.ts). */
  readonly bodyBytesInFlight: number;
  /** Graceful shutdown; idempotent (every call gets the same promise). */
  close(reason?: string): Promise<void>;
  /** Settles when the server has shut down. */
  readonly closed: Promise<void>;
}

export const DEFAULT_HTTP_PORT = 7420;

export { isLoopbackHost } from './auth';

/** A JSON error answer, the connection closed after it (the request could not be read whole). */
function closingAnswer(status: number, message: string, type: string): Response {
  return new Response(JSON.stringify({ error: { message, type } }), {
    status,
    headers: { 'content-type': 'application/json', connection: 'close' },
  });
}

/** What a request meets once the server is shutting down. */
function shuttingDown(request: Request): Response {
  const message = 'server shutting down';
  const flat = errorStyleFor(new URL(request.url).pathname) === 'flat';
  const body = flat ? { error: message, code: 503 } : { error: { message, type: 'unavailable' } };
  return new Response(JSON.stringify(body), {
    status: 503,
    headers: { 'content-type': 'application/json', connection: 'close' },
  });
}

/**
 * A request node-server could not turn into a web Request (a `Host` that is no host name, a
 * backslash in the path): a 400 naming what is wrong, where node-server answered an empty 400.
 */
function requestFailed(error: unknown): Response {
  if (error instanceof Error && error.name === 'RequestError')
    return closingAnswer(400, `bad request: ${error.message}`, 'invalid_input');
  return closingAnswer(500, 'internal error', 'internal');
}

/**
 * A request Node's parser refused (a malformed request line or header, headers over the limit,
 * a request not sent in time): a status and a JSON body naming it, where Node wrote a bare 400.
 */
function answerClientError(error: NodeJS.ErrnoException, socket: Duplex): void {
  // As Node's own handler: nothing is written where a response is already under way on the socket.
  const inFlight = (socket as { _httpMessage?: { headersSent?: boolean } })._httpMessage;
  if (error.code === 'ECONNRESET' || !socket.writable || inFlight?.headersSent) {
    socket.destroy(error);
    return;
  }
  const status =
    error.code === 'HPE_HEADER_OVERFLOW' || error.code === 'HPE_CHUNK_EXTENSIONS_OVERFLOW'
      ? 431
      : error.code === 'ERR_HTTP_REQUEST_TIMEOUT'
        ? 408
        : 400;
  const reason = (error as { reason?: string }).reason ?? error.code ?? 'unreadable request';
  socket.write(
    rawErrorAnswer(status, `bad request: the HTTP request could not be parsed (${reason})`, 'invalid_input'),
  );
  socket.destroy(error);
}

/**
 * Effective host, port and auth, checked: a host other than loopback needs a token (spec,
 * Authentication → HTTP server authentication; nobody on the network gets an open agent).
 */
export function resolveHttpSettings(config: Config, flags: HttpServerFlags = {}): HttpSettings {
  const http = config.services.http;
  const host = flags.host ?? http.host;
  const port = flags.port ?? http.port ?? DEFAULT_HTTP_PORT;
  if (!host.trim()) throw new SvcError('invalid_input', '--host: empty host');
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    throw new SvcError('invalid_input', `--port: expected an integer 0-65535, got ${port}`);
  }
  if (flags.token !== undefined && flags.token === '') {
    throw new SvcError('invalid_input', '--token: empty token');
  }
  if (flags.token !== undefined && flags.auth === 'none') {
    throw new SvcError(
      'invalid_input',
      '--auth none conflicts with --token: a configured token is always required; drop one of them',
    );
  }
  const tokenSource = flags.token ? 'flag' : http.token ? 'config' : 'none';
  const loopback = isLoopbackHost(host);
  if (!loopback && tokenSource === 'none') {
    throw new SvcError(
      'config_error',
      `refusing to listen on ${host} without a token: set --token, [services.http].token or SVC_HTTP_TOKEN` +
        ' (unauthenticated access is only allowed on a loopback host such as 127.0.0.1)',
    );
  }
  return { host, port, tokenSource, loopback };
}

export async function startHttpServer(options: StartHttpServerOptions): Promise<HttpServerHandle> {
  const flags = options.flags ?? {};
  const settings = resolveHttpSettings(options.config, flags);
  // Many runs and compat requests share this process: their writes commit in groups (store/db.ts).
  enableGroupCommit();
  const graceMs = options.graceMs ?? 5000;
  const streams = createStreamTracker();
  let app: App | undefined;
  let stopping = false;

  const current = () => app?.config ?? options.config;
  const { hono, node } = createHttpService(() => app, {
    // Per request, so `config reload` can rotate the token; the flag always wins.
    token: () => flags.token ?? current().services.http.token,
    // Unauthenticated access never on a non-loopback host, even if a reload drops the token.
    allowNoAuth: () =>
      settings.loopback &&
      (flags.auth !== undefined ? flags.auth === 'none' : current().services.http.allow_no_auth),
    maxBodyBytes: options.config.services.http.max_body_bytes,
    sseHeartbeatMs: options.http?.sseHeartbeatMs ?? options.config.services.http.sse_heartbeat_seconds * 1000,
    sseRetryMs: options.http?.sseRetryMs,
    sseMaxBufferedBytes: options.config.services.http.sse_max_buffered_bytes,
    sseMaxStreamsPerSession: options.config.services.http.sse_max_streams_per_session,
    streams,
    tools: options.http?.tools,
    extensions: options.http?.extensions,
    extend: options.http?.extend,
  });

  const serve = (request: Request, env: unknown) =>
    stopping ? shuttingDown(request) : hono.fetch(request, env);
  const listener = getRequestListener(serve, { errorHandler: requestFailed });
  // A hot route (the compat surface's `POST /v1/chat/completions`) is served from the request event
  // itself, before node-server builds its Request (node-front.ts); everything else, and everything
  // while stopping, goes through node-server to Hono.
  const { server, bodies } = nodeServer(options.config, current, () => stopping, node, listener);
  // An idle keep-alive connection is kept 65 s, not Node's 5: past the idle timeout of the load
  // balancers in front of a cluster (60 s is common), so the server never closes a connection a
  // balancer or a client is about to reuse (the client's request then fails with "other side
  // closed"; undici reuses a connection until 1 s before the server's advertised timeout, and a
  // loaded client's timers run late).
  server.keepAliveTimeout = KEEP_ALIVE_MS;
  server.on('clientError', answerClientError);
  // The session event stream as a WebSocket, through the same app (event-socket.ts).
  const sockets = serveEventSockets(server, { fetch: serve, stopping: () => stopping });

  await listen(server, settings.host, settings.port);
  const address = server.address() as AddressInfo;
  const url = `http://${address.family === 'IPv6' ? `[${address.address}]` : address.address}:${address.port}`;
  options.onListening?.(url);
  // Every route is mounted: build the router's matcher now (Hono's SmartRouter settles on its
  // RegExpRouter and compiles one regexp of all routes, ≈ 3–5 ms cold) rather than in the first
  // request, whose latency it would be. The path is never served; the App is built after.
  hono.router.match('GET', '/');

  try {
    app = await options.createApp();
  } catch (error) {
    await new Promise<void>((resolve) => server.close(() => resolve()));
    throw error;
  }
  // What the first requests would load or build on first use is done now, before ready: the
  // modules of a run's model path and the metrics registry (../../app/warm.ts).
  await warmService(app);
  const log = app.log.child({ component: 'http' });
  // After listen, a socket-level server error must be logged, never crash the process.
  server.on('error', (error) => log.error('http server error', { error }));
  if (flags.token) app.redactor.add(flags.token);
  app.runtime.surfaces.add('http');
  // The session route was mounted before the App existed: wire its publisher now.
  markSessionPublisher(app);
  app.runtime.server = true;
  app.runtime.httpUrl = url;
  app.runtime.ready = true;

  const workerController = new AbortController();
  const worker = options.worker?.(app);
  const workerDone = worker
    ? worker.run(workerController.signal).catch((error: unknown) => {
        log.error('worker failed', { worker: worker.name, error });
      })
    : Promise.resolve();

  let resolveClosed!: () => void;
  const closed = new Promise<void>((resolve) => {
    resolveClosed = resolve;
  });
  let closing: Promise<void> | undefined;
  const readyApp = app;

  const shutdown = async (reason: string) => {
    stopping = true;
    readyApp.runtime.stopping = true;
    log.info('http server stopping', { reason, open_streams: streams.size });
    const serverClosed = new Promise<void>((resolve) => server.close(() => resolve()));
    streams.closeAll();
    sockets.closeAll();
    // Connections turn idle as their responses end (the SSE streams just now): close them as they do,
    // instead of waiting for the keep-alive timeout.
    server.closeIdleConnections();
    const sweeper = setInterval(() => server.closeIdleConnections(), 20);
    void serverClosed.then(() => clearInterval(sweeper));
    workerController.abort(new Error(`server shutting down (${reason})`));
    await withTimeout(workerDone, graceMs);
    const finished = await withTimeout(serverClosed, graceMs);
    if (!finished) {
      log.warn('in-flight requests did not finish in time; closing their connections', { grace_ms: graceMs });
      server.closeAllConnections();
      sockets.terminateAll();
      await withTimeout(serverClosed, 1000);
    }
    clearInterval(sweeper);
    readyApp.runtime.ready = false;
    await readyApp.close();
    log.info('http server stopped', { reason, db_closed: !readyApp.hasDb() });
  };

  log.info('http server listening', {
    url,
    auth: authMode(settings, flags, readyApp.config),
    token_source: settings.tokenSource,
    worker: worker?.name ?? null,
  });

  return {
    url,
    host: settings.host,
    port: address.port,
    app: readyApp,
    settings,
    streams,
    get bodyBytesInFlight() {
      return bodies.inFlight;
    },
    closed,
    close(reason = 'close') {
      closing ??= shutdown(reason).finally(resolveClosed);
      return closing;
    },
  };
}

/**
 * The node:http server: what request bodies being received may hold, on every route (body-guard.ts,
 * read per request), then the hot route, then node-server to Hono; its connection limits.
 */
function nodeServer(
  config: Config,
  current: () => Config,
  stopping: () => boolean,
  node: NodeRoute,
  listener: ReturnType<typeof getRequestListener>,
): { server: Server; bodies: BodyGuard } {
  const bodies = createBodyGuard(
    () => {
      const http = current().services.http;
      return {
        maxBytesInFlight: http.max_body_bytes_in_flight,
        maxBodyBytes: config.services.http.max_body_bytes,
        idleMs: http.body_idle_timeout_seconds * 1000,
      };
    },
    (path) => errorStyleFor(path) === 'flat',
  );
  // Node's own check of a missing `Host` (HTTP/1.1) answered an empty 400, and an HTTP/1.0 request
  // without one reached the hot route but no other: every route now answers it the same JSON 400.
  const options = { ...connectionOptions(config.services.http), requireHostHeader: false };
  const server = createServer(options, (incoming, outgoing) => {
    if (incoming.headers.host === undefined) {
      answerMissingHost(incoming.url ?? '/', outgoing);
      return;
    }
    if (!stopping() && !bodies.admit(incoming, outgoing)) return;
    if (!stopping() && node(incoming, outgoing)) return;
    void listener(incoming, outgoing);
  });
  limitConnections(server, config.services.http);
  return { server, bodies };
}

/**
 * A request with no `Host` header: the 400 node-server answers it (`requestFailed`), the body
 * unread, in the error style of its path (the compat routes' flat one).
 */
function answerMissingHost(target: string, outgoing: ServerResponse): void {
  const message = 'bad request: Missing host header';
  const path = target.split('?', 1)[0] ?? '/';
  const flat = errorStyleFor(path) === 'flat';
  const body = JSON.stringify(
    flat ? { error: message, code: 400 } : { error: { message, type: 'invalid_input' } },
  );
  outgoing.writeHead(400, {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(body),
    connection: 'close',
  });
  outgoing.end(body);
}

/** What a request without a bearer meets: `bearer` (token), `none` (passes), `closed` (every request 401). */
export function authMode(
  settings: HttpSettings,
  flags: HttpServerFlags,
  config: Config,
): 'bearer' | 'none' | 'closed' {
  if (settings.tokenSource !== 'none') return 'bearer';
  const allow = flags.auth !== undefined ? flags.auth === 'none' : config.services.http.allow_no_auth;
  return settings.loopback && allow ? 'none' : 'closed';
}

function listen(server: Server, host: string, port: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const onError = (error: NodeJS.ErrnoException) => {
      server.off('listening', onListening);
      const where = `${host}:${port}`;
      if (error.code === 'EADDRINUSE') {
        reject(
          new SvcError(
            'unavailable',
            `cannot listen on ${where}: address already in use (choose another --port)`,
          ),
        );
      } else if (error.code === 'EACCES') {
        reject(
          new SvcError('forbidden', `cannot listen on ${where}: permission denied (use a port above 1023)`),
        );
      } else if (error.code === 'EADDRNOTAVAIL' || error.code === 'ENOTFOUND') {
        reject(new SvcError('invalid_input', `--host: ${host} is not an address of this machine`));
      } else {
        reject(new SvcError('unavailable', `cannot listen on ${where}: ${error.message}`, { cause: error }));
      }
    };
    const onListening = () => {
      server.off('error', onError);
      resolve();
    };
    server.once('error', onError);
    server.once('listening', onListening);
    server.listen(port, host);
  });
}

async function withTimeout(promise: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<false>((resolve) => {
    timer = setTimeout(() => resolve(false), ms);
  });
  try {
    return await Promise.race([promise.then(() => true as const), timeout]);
  } finally {
    clearTimeout(timer);
  }
}
