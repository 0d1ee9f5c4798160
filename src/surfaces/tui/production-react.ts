/**
 * React's production build for the terminal UI (issue 17, item 4).
 *
 * react, react-reconciler and scheduler pick their development or production build from
 * `process.env.NODE_ENV` when they are first loaded, and nothing sets it for svc: the TUI ran
 * React's development build (its extra checks, its component stacks, a `performance.measure` per
 * render). The TUI loads its modules with `NODE_ENV=production` and puts the variable back as it
 * was as soon as they are loaded: removed when the user had none, the user's own value (say
 * `development`, for their project) otherwise. So the commands svc starts afterwards (the agent's
 * bash tool, hooks, MCP servers, the user's `npm test`) never see a NODE_ENV that svc set; React,
 * once loaded, no longer reads it.
 *
 * Node's ESM loader reads the development files anyway (it follows `module.exports = require()`
 * in react's index.js to learn the export names) and keeps their source in `require.cache`, never
 * run: ≈ 1 MB of heap, dropped once the TUI has loaded.
 *
 * This module loads neither ink nor react, so the CLI can load it first.
 * @module
 */
import { createRequire } from 'node:module';

/** Run `load` (the `import()` of the TUI's modules) with NODE_ENV=production, then restore it. */
export async function withProductionReact<T>(
  load: () => Promise<T>,
  env: NodeJS.ProcessEnv = process.env,
): Promise<T> {
  const previous = env.NODE_ENV;
  env.NODE_ENV = 'production';
  try {
    const loaded = await load();
    dropUnusedDevelopmentBuilds(createRequire(import.meta.url).cache);
    return loaded;
  } finally {
    // `env.NODE_ENV = undefined` would store the string "undefined" in process.env.
    if (previous === undefined) delete env.NODE_ENV;
    else env.NODE_ENV = previous;
  }
}

const DEVELOPMENT_BUILD = /[\\/](react|react-reconciler|scheduler)[\\/]cjs[\\/][^\\/]+\.development\.js$/;

/** Drops React's development files that were read but never run from the module cache. */
export function dropUnusedDevelopmentBuilds(cache: NodeJS.Dict<NodeJS.Module>): void {
  for (const [path, module] of Object.entries(cache))
    if (module && !module.loaded && DEVELOPMENT_BUILD.test(path)) delete cache[path];
}
