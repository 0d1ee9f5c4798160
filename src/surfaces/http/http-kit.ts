/**
 * What a hand-written HTTP route family is: the `HttpExtension` signature and the `HttpKit` it
 * gets. Apart from the list in extensions.ts, so a family (compat, A2A) names its own type
 * without importing the list that imports it.
 * @module
 */
import type { Hono } from 'hono';
import type { ErrorStyle } from './errors';
import type { AppRef } from './mount-tools';
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
 * Mounts one route family. Check `appRef()?.runtime.ready` (503 `App not ready`) in handlers that
 * need the App; auth and the body limit already ran.
 */
export type HttpExtension = (hono: Hono, appRef: AppRef, kit: HttpKit) => void;
