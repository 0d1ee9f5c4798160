/**
 * Hand-written route families mounted after the built-in routes, one function each (like the CLI
 * registrars): the compat surface and A2A plug in here (every session API route is a tool's
 * binding, mounted with the registry), so every server
 * (`svc service start http|autopilot`, tests through createHttpApp) serves them. The signature
 * of a family is in http-kit.ts.
 * @module
 */
import { mountA2aRoutes } from '../a2a/routes';
import { compatSurface } from './compat/routes';
import type { HttpExtension } from './http-kit';

export type { HttpExtension, HttpKit } from './http-kit';

/** The compat surface and A2A. */
export const httpExtensions: readonly HttpExtension[] = [
  compatSurface,
  // A2A agent card + JSON-RPC, answered when [a2a] enabled is true (src/surfaces/a2a/routes.ts).
  mountA2aRoutes,
];
