/**
 * Which registry tools each MCP server owns. A server's tool list replaces only what that server
 * added before; a name that belongs to a built-in tool or another server is rejected, never
 * replaced.
 * @module
 */
import { isRemoteTool, type RemoteToolDef, type RemoteToolSink } from './remote-tools';

export interface ToolOwnership {
  /** Replace server `id`'s tools with `defs`; returns the names rejected as foreign. */
  set(id: string, defs: RemoteToolDef[]): string[];
  /** Remove every server's tools from the registry and forget them. */
  releaseAll(): void;
}

export function createToolOwnership(tools: RemoteToolSink): ToolOwnership {
  /** Registry names each server currently owns. */
  const owned = new Map<string, Set<string>>();
  return {
    set(id, defs) {
      const mine = owned.get(id) ?? new Set<string>();
      // Never replace a tool this server does not own (a built-in one, another server's).
      const foreign = new Set(
        tools
          .gates()
          .map((g) => g.tool.name)
          .filter((name) => !mine.has(name)),
      );
      const rejected = defs.filter((d) => foreign.has(d.name)).map((d) => d.name);
      const accepted = defs.filter((d) => !foreign.has(d.name));
      const next = new Set(accepted.map((d) => d.name));
      const stale = [...mine].filter((name) => !next.has(name));
      if (stale.length) tools.remove((t) => isRemoteTool(t) && stale.includes(t.name));
      if (accepted.length) tools.add(accepted);
      owned.set(id, next);
      return rejected;
    },
    releaseAll() {
      const names = new Set([...owned.values()].flatMap((s) => [...s]));
      if (names.size) tools.remove((t) => isRemoteTool(t) && names.has(t.name));
      owned.clear();
    },
  };
}
