/**
 * What a hand-written HTTP route family is: the `HttpExtension` signature and the `HttpKit` it
 * gets. Apart from the list in extensions.ts, so a family (compat, A2A) names its own type
 * without importing the list that imports it.
 * @module
 */
import type { Context, Hono } from 'hono';
import type { ErrorStyle } from './errors';
import type { AppRef } from './mount-tools';
import type { NodeRoute } from './node-front';
import type { OpenApiRoutes } from './openapi';
import type { StreamTracker } from './sse';

/** What a route family gets besides the Hono app and the App reference. */
export interface HttpKit {
  /** Register SSE streams here (openSseStream's `tracker`) so shutdown ends them. */
  streams: StreamTracker;
  /** Describe hand-mounted routes so they appear in /v1/openapi.json. */
  openapi: OpenApiRoutes;
  /** Error body style of a path (flat on compat routes, text where a binding asks for it). */
  errorStyleFor(path: string): ErrorStyle;
}

/**
 * What a route in front of the middleware gets: `gate(c)` runs the middleware's checks on the
 * request at once (createHttpApp's `frontGate`): a `Response` is the refusal to answer (401, 503
 * store down, 413), `true` admits the request to the route's handler, `false` says the request
 * needs the middleware chain itself (no App yet, telemetry tracing, a body without a declared
 * length): the route then calls `next()` and the request takes the ordinary chain and route.
 */
export interface FrontKit extends HttpKit {
  gate(c: Context): Response | boolean;
}

/**
 * Mounts one route family. Check `appRef()?.runtime.ready` (503 `App not ready`) in handlers that
 * need the App; auth and the body limit already ran. `front`, when a family has one, mounts a hot
 * route before the middleware (auth, store check, body limit: one synchronous `gate` instead of a
 * middleware chain); the family mounts the same route the ordinary way too, for what the gate
 * sends on (FrontKit). `node`, when a family has one, serves that route straight from node:http's
 * request event where the server built by `createHttpService` is (node-front.ts): the same gate on a
 * Context stand-in, the same handler, the answer written to the Node response; a request it does
 * not take (`false`) goes to Hono (and its `front` route) as before.
 */
export interface HttpExtension {
  (hono: Hono, appRef: AppRef, kit: HttpKit): void;
  front?: (hono: Hono, appRef: AppRef, kit: FrontKit) => void;
  node?: (appRef: AppRef, kit: FrontKit) => NodeRoute;
}
