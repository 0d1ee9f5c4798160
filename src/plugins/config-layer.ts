/**
 * The config hook of plugins: each installed plugin's `[mcp.<id>]` and `[agents.<id>]` blocks
 * become one config layer just above the defaults (every file the user wrote wins, field by
 * field), so the MCP client connects to plugin servers and agent kinds include plugin kinds with
 * no change in either subsystem. `createApp` passes this as `layers` to `loadConfig`.
 * @module
 */
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import type { ConfigLayer } from '../config/load';
import { SvcError } from '../errors';
import { loadManifest, MANIFEST_FILE, withPluginDir } from './manifest';

/** Where installed plugins live: `<data dir>/plugins/<name>/`. */
export function pluginsDir(dataDir: string): string {
  return join(dataDir, 'plugins');
}

export function pluginConfigLayers(dir: string): ConfigLayer[] {
  let names: string[];
  try {
    names = readdirSync(dir)
      .filter((name) => !name.startsWith('.'))
      .sort();
  } catch {
    return []; // nothing installed
  }
  const layers: ConfigLayer[] = [];
  for (const name of names) {
    const root = join(dir, name);
    try {
      const { manifest } = loadManifest(root);
      const tree: Record<string, unknown> = {};
      if (Object.keys(manifest.mcp).length) tree.mcp = withPluginDir(stripUndefined(manifest.mcp), root);
      if (Object.keys(manifest.agents).length) tree.agents = stripUndefined(manifest.agents);
      if (Object.keys(tree).length === 0) continue;
      layers.push({
        tree,
        source: { kind: 'plugin', label: `plugin ${manifest.name}`, path: join(root, MANIFEST_FILE) },
      });
    } catch (error) {
      const reason = SvcError.is(error) ? error.message : String(error);
      layers.push({
        tree: {},
        source: { kind: 'plugin', label: `plugin ${name}` },
        warnings: [`plugin ${name}: not loaded: ${reason}`],
      });
    }
  }
  return layers;
}

/** Parsed manifests carry schema defaults as undefined keys; a config layer wants only what was written. */
function stripUndefined<T>(value: T): T {
  return JSON.parse(JSON.stringify(value)) as T;
}
