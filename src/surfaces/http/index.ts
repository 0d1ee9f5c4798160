/**
 * The HTTP surface: a Hono app over an App. Order of the pipeline: `GET /healthz` and the web
 * UI's files (`/`, `/assets/*`; the only unprotected routes) → bearer auth → body limit → the
 * registry's routes, the SSE session stream, `GET /v1/openapi.json`, then extension routes
 * (session API, compat surface) → 404 for anything else and 405 for a known path with the wrong
 * method. A family's hot route (`HttpExtension.front`: the compat surface's
 * `POST /v1/chat/completions`) is matched before all of it and makes the same checks at once
 * (`frontGate`), or sends the request down this pipeline when it cannot. The server
 * (`createHttpService`) serves that route straight from node:http's request event, ahead of Hono
 * itself (`HttpExtension.node`, node-front.ts), with the same gate and handler.
 * @module
 */
import { type Context, Hono, type MiddlewareHandler } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import { methodNotAllowed } from 'hono/method-not-allowed';
import type { App } from '../../app';
import { SvcError } from '../../errors';
import type { AnyTool } from '../../tools/core/define-tool';
import { allTools } from '../../tools/index';
import { VERSION } from '../../version';
import {
  bearerAuth,
  bearerRefusal,
  browserRefusal,
  openRouteRefusal,
  refused,
  refusedFromBrowser,
} from './auth';
import { type ErrorStyle, errorResponse } from './errors';
import { type HttpExtension, type HttpKit, httpExtensions } from './extensions';
import type { FrontKit } from './http-kit';
import { type AppRef, bindingsOf, mountTools } from './mount-tools';
import type { NodeRoute } from './node-front';
import { buildOpenApiDocument, createOpenApiRoutes, type OpenApiRoutes } from './openapi';
import { mountSessionEvents, SESSION_EVENTS_PATH } from './session-events';
import { createStreamTracker, type StreamTracker } from './sse';
import { createSseBudget } from './sse-budget';
import { mountWebUi } from './web-ui';

export type { HttpExtension, HttpKit } from './extensions';
export type { AppRef } from './mount-tools';
export type { NodeRoute } from './node-front';
export type { OpenApiRoutes } from './openapi';
export type { SseMessage, SseStream, StreamTracker } from './sse';
export { createStreamTracker, openSseStream } from './sse';

export interface HttpAppOptions {
  /** Service token; default `[services.http].token` of the app config. A function is read per request. */
  token?: string | (() => string | undefined);
  /** AllowNoAuth; default `[services.http].allow_no_auth`. A function is read per request. */
  allowNoAuth?: boolean | (() => boolean);
  maxBodyBytes?: number;
  /** Interval of SSE heartbeat comments; default `[services.http].sse_heartbeat_seconds`. */
  sseHeartbeatMs?: number;
  /** SSE `retry:` hint sent with `connected` (client reconnect delay); default 1000 ms. */
  sseRetryMs?: number;
  /** Bytes all session event streams may hold for their clients; default `[services.http].sse_max_buffered_bytes`. */
  sseMaxBufferedBytes?: number;
  /** Session event streams one session may have open; default `[services.http].sse_max_streams_per_session`. */
  sseMaxStreamsPerSession?: number;
  /** Open SSE streams; pass one to end them at shutdown (the server does). */
  streams?: StreamTracker;
  /** Tools whose bindings are mounted; default every defined tool (registration is checked per request). */
  tools?: readonly AnyTool[];
  /** Route families mounted after the built-in ones; default `httpExtensions` (session API, compat). */
  extensions?: readonly HttpExtension[];
  /** One more route family, after `extensions` (tests, embedders). */
  extend?: HttpExtension;
  /** Directory of the built web UI served at `/` (default dist/web); see web-ui.ts. */
  webRoot?: string;
}

const COMPAT_PATHS = new Set(['/v1/chat/completions', '/v1/completions']);

/** Compat routes use the flat error body (spec, Errors → Compat surface). */
export function errorStyleFor(path: string): ErrorStyle {
  return COMPAT_PATHS.has(path) || path.startsWith('/v1/openai-compat/') ? 'flat' : 'canonical';
}

export function createHttpApp(target: App | AppRef, options: HttpAppOptions = {}): Hono {
  return createHttpService(target, options).hono;
}

/**
 * The Hono app, and the hot routes to serve straight from node:http ahead of it (`node`: the
 * families' `HttpExtension.node`, tried in order; `false` when none takes the request, which then
 * goes to Hono). The server (server.ts) calls `node` from its request event.
 */
export function createHttpService(
  target: App | AppRef,
  options: HttpAppOptions = {},
): { hono: Hono; node: NodeRoute } {
  const appRef: AppRef = typeof target === 'function' ? target : () => target;
  const hono = new Hono();
  const initial = appRef();
  const tools = options.tools ?? allTools;
  const streams = options.streams ?? createStreamTracker();
  const openapi = createOpenApiRoutes();
  const styleFor = routeErrorStyles(tools);
  const kit: HttpKit = { streams, openapi, errorStyleFor: styleFor };
  // Streams end with the App (a server ends them itself first, with a shutdown event).
  initial?.onClose(() => streams.closeAll());

  hono.onError((error, c) => errorResponse(c, error, { style: styleFor(c.req.path), app: appRef() }));
  hono.notFound((c) =>
    errorResponse(c, new SvcError('not_found', `no route ${c.req.method} ${c.req.path}`), {
      style: styleFor(c.req.path),
    }),
  );

  const edge = edgeChecks(appRef, options, styleFor, streams);
  const { gauge, tooLarge, limit } = edge;
  // Hot routes first, ahead of the middleware below (`HttpExtension.front`, `frontGate`).
  const extensions = options.extensions ?? httpExtensions;
  const frontKit: FrontKit = { ...kit, gate: edge.frontGate };
  for (const extension of extensions) extension.front?.(hono, appRef, frontKit);
  options.extend?.front?.(hono, appRef, frontKit);
  // A HEAD is answered as its GET without the body (Hono), but the body Hono drops is not
  // cancelled: an event stream opened for it would keep its subscription, attachment and heartbeat
  // until the session or the server ended (one more each HEAD). Cancel it: the route tears down.
  // After the hot routes (a POST), ahead of every GET route.
  hono.use(async (c, next) => {
    if (c.req.method !== 'HEAD') return next();
    await next();
    await c.res.body?.cancel().catch(() => {});
  });
  const nodeRoutes: NodeRoute[] = [];
  for (const extension of [...extensions, options.extend]) {
    const route = extension?.node?.(appRef, frontKit);
    if (route) nodeRoutes.push(route);
  }
  const node: NodeRoute =
    nodeRoutes.length === 1
      ? nodeRoutes[0]
      : (incoming, outgoing) => nodeRoutes.some((route) => route(incoming, outgoing));

  hono.use(
    methodNotAllowed({
      app: hono,
      onMethodNotAllowed: (c: Context, methods: string[]) => {
        const response = errorResponse(
          c,
          new SvcError('invalid_input', `method ${c.req.method} not allowed on ${c.req.path}`, {
            status: 405,
          }),
          { style: styleFor(c.req.path) },
        );
        response.headers.set('allow', methods.join(', '));
        return response;
      },
    }),
  );
  // No bearer on these two, but with no token only a loopback Host (DNS rebinding; auth.ts).
  const refuseHost = openRouteRefusal(edge.token, styleFor);
  hono.get('/healthz', (c) => {
    const misaddressed = refuseHost(c);
    if (misaddressed) return misaddressed;
    const app = appRef();
    // issue 15: a svc.db that cannot be opened (read-only, corrupt) is not ready, and says why.
    const status = app?.runtime.ready ? app.dbStatus() : undefined;
    const reason = status?.error;
    // issue 18: the store this node serves from. A store this node cannot use makes it unhealthy
    // (503: a load balancer takes it out); it comes back by itself when the store does.
    const store = {
      kind: status?.kind ?? 'sqlite',
      ok: !reason,
      ...(status?.schema_version !== undefined ? { schema_version: status.schema_version } : {}),
    };
    return c.json(
      {
        ok: true,
        ready: Boolean(app?.runtime.ready) && !reason,
        ...(reason ? { reason } : {}),
        store,
        version: VERSION,
      },
      reason ? 503 : 200,
    );
  });
  // The browser UI's files: before auth (the page holds no data; its API calls carry the token).
  mountWebUi(hono, { root: options.webRoot, refuse: refuseHost });

  // One HTTP server span per request (W3C trace context from the caller) when telemetry is on.
  hono.use(async (c, next) => {
    const app = appRef();
    if (!app) return next();
    gauge(app);
    // No span to make (telemetry off): no request description, closure or await for nothing.
    if (!app.telemetry.tracing) return next();
    await app.telemetry.http(
      { method: c.req.method, path: c.req.path, headers: c.req.raw.headers },
      async () => {
        await next();
        return c.res;
      },
    );
  });

  hono.use(bearerAuth({ token: edge.token, allowNoAuth: edge.allowNoAuth, styleFor }));
  // issue 18: while this node cannot reach its PostgreSQL store, every protected request is a 503
  // naming why (at once, rather than after the pool's connect timeout); the store monitor sees the
  // database return and the node serves again by itself.
  hono.use(async (c, next) => {
    const down = appRef()?.storeUnavailable();
    if (down) return errorResponse(c, new SvcError('unavailable', down), { style: styleFor(c.req.path) });
    return next();
  });
  hono.use(limitBody(tooLarge, limit));

  // Prometheus text of svc's metrics (src/telemetry/metrics.ts), behind the bearer like every route.
  hono.get('/metrics', async (c) => {
    const app = appRef();
    if (!app) return errorResponse(c, new SvcError('unavailable', 'App not ready'));
    return new Response(await app.telemetry.metrics.render(), {
      headers: { 'content-type': app.telemetry.metrics.contentType },
    });
  });
  mountTools(hono, appRef, tools);

  const heartbeatMs =
    options.sseHeartbeatMs ?? (initial?.config.services.http.sse_heartbeat_seconds ?? 15) * 1000;
  const budget = sessionStreamBudget(options, initial);
  mountSessionEvents(hono, appRef, { heartbeatMs, retryMs: options.sseRetryMs, streams, budget });
  describeBuiltinRoutes(openapi);

  hono.get('/v1/openapi.json', (c) => {
    const app = appRef();
    if (!app?.runtime.ready) return errorResponse(c, new SvcError('unavailable', 'App not ready'));
    return c.json(
      buildOpenApiDocument(app, { mounted: tools, routes: openapi, serverUrl: new URL(c.req.url).origin }),
    );
  });

  for (const extension of extensions) extension(hono, appRef, kit);
  options.extend?.(hono, appRef, kit);
  return { hono, node };
}

/** The limits over the session event streams: the options, else `[services.http]`, else its defaults. */
function sessionStreamBudget(options: HttpAppOptions, initial: App | undefined) {
  const http = initial?.config.services.http;
  return createSseBudget({
    maxBufferedBytes: options.sseMaxBufferedBytes ?? http?.sse_max_buffered_bytes ?? 128 * 1024 * 1024,
    maxStreamsPerSession: options.sseMaxStreamsPerSession ?? http?.sse_max_streams_per_session ?? 16,
  });
}

/**
 * The protected routes' checks, shared by the middleware and a hot route's gate: the token and
 * AllowNoAuth read per request, the body limit and its 413, the SSE gauge registered on an App's
 * first request, and `frontGate` (the middleware's decisions as one synchronous call).
 */
function edgeChecks(
  appRef: AppRef,
  options: HttpAppOptions,
  styleFor: (path: string) => ErrorStyle,
  streams: StreamTracker,
) {
  const initial = appRef();
  const setting = <T>(value: T | (() => T) | undefined): (() => T | undefined) =>
    typeof value === 'function' ? (value as () => T) : () => value;
  const token = setting(options.token);
  const allowNoAuth = setting(options.allowNoAuth);
  const currentToken = () => (options.token !== undefined ? token() : appRef()?.config.services.http.token);
  const currentAllowNoAuth = () =>
    (options.allowNoAuth !== undefined ? allowNoAuth() : appRef()?.config.services.http.allow_no_auth) ??
    false;
  const limit = options.maxBodyBytes ?? initial?.config.services.http.max_body_bytes ?? 10 * 1024 * 1024;
  const tooLarge = (c: Context) =>
    errorResponse(
      c,
      new SvcError('invalid_input', `request body over the ${limit}-byte limit`, { status: 413 }),
      { style: styleFor(c.req.path) },
    );
  // The open SSE streams count as the svc_sse_subscribers gauge, registered on an App's first request.
  const gauged = new WeakSet<object>();
  const gauge = (app: App) => {
    if (gauged.has(app)) return;
    gauged.add(app);
    app.onClose(app.telemetry.metrics.gauge('sse_subscribers', () => streams.size));
  };

  // A hot route's gate (the compat surface's `POST /v1/chat/completions`, mounted before the
  // middleware): the same decisions in the same order (the request's span, bearer auth, the store's state, the
  // body limit) as one synchronous call, not a chain of five async middleware (their promises, the
  // 405 check's read of the answer after it). Whatever the call does not decide itself (no App
  // yet, tracing on, a body of undeclared length) goes down the ordinary chain (`false`).
  const frontGate = (c: Context): Response | boolean => {
    const app = appRef();
    if (!app || app.telemetry.tracing) return false;
    const headers = c.req.raw.headers;
    const declared = headers.has('content-length') && !headers.has('transfer-encoding');
    if (!declared && c.req.method !== 'GET' && c.req.method !== 'HEAD') return false;
    gauge(app);
    const token = currentToken();
    const refusal = bearerRefusal(c.req.header('authorization'), token, currentAllowNoAuth);
    if (refusal !== undefined) return refused(c, refusal, styleFor(c.req.path));
    const fromPage = token ? undefined : browserRefusal(headers);
    if (fromPage !== undefined) return refusedFromBrowser(c, fromPage, styleFor(c.req.path));
    const down = app.storeUnavailable();
    if (down) return errorResponse(c, new SvcError('unavailable', down), { style: styleFor(c.req.path) });
    if (declared && Number.parseInt(headers.get('content-length') || '0', 10) > limit) return tooLarge(c);
    return true;
  };
  return {
    token: currentToken,
    allowNoAuth: currentAllowNoAuth,
    limit,
    tooLarge,
    gauge,
    frontGate,
  };
}

/**
 * The body limit (413 past `limit` bytes). hono's bodyLimit asks `c.req.raw.body` first, which
 * makes the Node adapter build a whole Web `Request` (and a ReadableStream over the socket) for
 * every request, and the handler's `c.req.json()` then reads through it instead of the adapter's
 * direct read (issue 17). The same decisions without it: no body for GET/HEAD, a declared length
 * is checked as declared, and only a chunked body goes through bodyLimit's counting reader.
 */
function limitBody(tooLarge: (c: Context) => Response, limit: number): MiddlewareHandler {
  const limitStreamedBody = bodyLimit({ maxSize: limit, onError: tooLarge });
  return async (c, next) => {
    const method = c.req.method;
    if (method === 'GET' || method === 'HEAD') return next();
    const headers = c.req.raw.headers;
    if (headers.has('content-length') && !headers.has('transfer-encoding'))
      return Number.parseInt(headers.get('content-length') || '0', 10) > limit ? tooLarge(c) : next();
    return limitStreamedBody(c, next);
  };
}

/** Error style per path: compat routes flat, tool bindings that ask for text get text. */
function routeErrorStyles(tools: readonly AnyTool[]): (path: string) => ErrorStyle {
  const text: RegExp[] = [];
  for (const tool of tools) {
    for (const binding of bindingsOf(tool)) {
      if (binding.errors === 'text') text.push(pathPattern(binding.path));
    }
  }
  return (path) => {
    if (text.some((pattern) => pattern.test(path))) return 'text';
    return errorStyleFor(path);
  };
}

function pathPattern(path: string): RegExp {
  const source = path
    .split('/')
    .map((segment) => (segment.startsWith(':') ? '[^/]+' : segment.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')))
    .join('/');
  return new RegExp(`^${source}/?$`);
}

function describeBuiltinRoutes(openapi: OpenApiRoutes): void {
  openapi.add('GET', '/healthz', {
    operationId: 'healthz',
    summary: 'Liveness: the only route that needs no bearer token.',
    security: [],
    tags: ['service'],
    responses: {
      '200': {
        description:
          '`ready` turns true once the database is open and the tool registry built; it is false with a `reason` while svc.db cannot be opened (read-only, corrupt).',
        content: {
          'application/json': {
            schema: {
              type: 'object',
              properties: {
                ok: { type: 'boolean' },
                ready: { type: 'boolean' },
                reason: { type: 'string' },
                store: {
                  type: 'object',
                  description:
                    'The store: `kind` (sqlite or postgres), `ok` (false while it cannot be used), `schema_version` once open.',
                  properties: {
                    kind: { type: 'string', enum: ['sqlite', 'postgres'] },
                    ok: { type: 'boolean' },
                    schema_version: { type: 'integer' },
                  },
                  required: ['kind', 'ok'],
                },
                version: { type: 'string' },
              },
              required: ['ok', 'ready', 'store', 'version'],
            },
          },
        },
      },
    },
  });
  openapi.add('GET', '/v1/openapi.json', {
    operationId: 'openapi',
    summary: 'This document, generated from the registry.',
    tags: ['service'],
    responses: {
      '200': {
        description: 'OpenAPI 3.1 document.',
        content: { 'application/json': { schema: { type: 'object' } } },
      },
      '401': { $ref: '#/components/responses/Unauthorized' },
      '503': { $ref: '#/components/responses/NotReady' },
    },
  });
  openapi.add('GET', SESSION_EVENTS_PATH, {
    operationId: 'session_events',
    summary: 'The session event stream (SSE).',
    description:
      'First a `connected` event; with `include_snapshot` one adaptive-orchestration resync event; a `resync` ' +
      'event when `Last-Event-ID` is older than the retained ring (what follows comes from the session event ' +
      'log); the replay (the retained ring, or every event after `Last-Event-ID`); then live events. Every event ' +
      'has `id:` and `event:`; `data:` is the JSON payload. Heartbeats are `: ping N` comments.',
    tags: ['sessions'],
    parameters: [
      { name: 'id', in: 'path', required: true, schema: { type: 'string' }, description: 'Session id.' },
      {
        name: 'include_snapshot',
        in: 'query',
        required: false,
        schema: { type: 'string', enum: ['1', 'true', 'yes', 'on', '0', 'false', 'no', 'off'] },
        description: 'Send one adaptive-orchestration resync event from the current snapshot first.',
      },
      {
        name: 'Last-Event-ID',
        in: 'header',
        required: false,
        schema: { type: 'string', pattern: '^[0-9]+$' },
        description: 'Resume after this event id (EventSource clients send it when they reconnect).',
      },
      {
        name: 'attach',
        in: 'query',
        required: false,
        schema: { type: 'string', enum: ['1', 'true', 'yes', 'on', '0', 'false', 'no', 'off'] },
        description:
          'Default on: while the stream is open the client counts as attached, so permission requests of the ' +
          'session wait for an answer instead of failing unattended. attach=0 for a monitor that never answers.',
      },
      {
        name: 'last_event_id',
        in: 'query',
        required: false,
        schema: { type: 'string', pattern: '^[0-9]+$' },
        description: 'Same as the Last-Event-ID header, for clients that cannot set headers.',
      },
    ],
    responses: {
      '200': {
        description: 'An SSE stream.',
        content: { 'text/event-stream': { schema: { type: 'string' } } },
      },
      '400': { $ref: '#/components/responses/BadRequest' },
      '401': { $ref: '#/components/responses/Unauthorized' },
      '404': { $ref: '#/components/responses/NotFound' },
      '503': { $ref: '#/components/responses/NotReady' },
    },
  });
}
