/**
 * Config blocks that cannot run side by side: a server listed twice (same command line or URL
 * under two ids), or two ids whose tool prefixes collide after sanitizing. The first keeps
 * running; the others are `blocked` with a message that says why and what to edit.
 * @module
 */
import type { McpServerConfig } from '../config/schema';
import type { McpConnection } from './connection';
import { sanitizeName, toolPrefix } from './remote-tools';
import { targetOf, transportType } from './transport';

/** Sets (or clears) `blocked` on every connection, in config order. */
export function markBlocked(connections: ReadonlyMap<string, McpConnection>): void {
  const byTarget = new Map<string, string>();
  const byPrefix = new Map<string, string>();
  for (const [id, connection] of connections) {
    connection.blocked = null;
    if (connection.config.disabled) continue;
    const target = `${transportType(connection.config)} ${targetKey(connection.config)}`;
    const prefix = toolPrefix(id);
    const twin = byTarget.get(target);
    const clash = byPrefix.get(prefix);
    if (twin) {
      connection.blocked = `mcp.${id} is the same server as mcp.${twin} (${targetOf(connection.config)}): listed twice; remove one of the two blocks`;
    } else if (clash) {
      connection.blocked = `mcp.${id} and mcp.${clash} both give tool names starting ${prefix}; rename one (ids are sanitized to ${sanitizeName(id)})`;
    } else {
      byTarget.set(target, id);
      byPrefix.set(prefix, id);
    }
  }
}

function targetKey(config: McpServerConfig): string {
  if (transportType(config) === 'stdio') {
    return JSON.stringify([config.command ?? '', config.args ?? [], config.cwd ?? '.', sorted(config.env)]);
  }
  let url = config.url ?? '';
  try {
    url = new URL(url).href;
  } catch {
    // reported by the connection itself
  }
  return JSON.stringify([url, sorted(config.headers)]);
}

/** Same command line, cwd and env (or URL and headers) = the same server listed twice. */
function sorted(record: Record<string, string> | undefined): [string, string][] {
  return Object.entries(record ?? {}).sort(([a], [b]) => a.localeCompare(b));
}
