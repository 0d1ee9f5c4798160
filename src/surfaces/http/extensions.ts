/**
 * Hand-written route families mounted after the built-in routes, one function each (like the CLI
 * registrars): the compat surface and A2A plug in here (every session API route is a tool's
 * binding, mounted with the registry), so every server
 * (`svc service start http|autopilot`, tests through createHttpApp) serves them.
 * @module
 */
import type { Hono } from 'hono';
import { mountA2aRoutes } from '../a2a/routes';
import { compatSurface } from './compat/routes';
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

/** The compat surface and A2A. */
export const httpExtensions: readonly HttpExtension[] = [
  compatSurface,
  // A2A agent card + JSON-RPC, answered when [a2a] enabled is true (src/surfaces/a2a/routes.ts).
  mountA2aRoutes,
];
