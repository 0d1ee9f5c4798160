/**
 * The registry: every tool definition, which ones pass their gates (registered), and lookups by
 * native name, MCP name and migration alias.
 * @module
 */
import { SvcError } from '../../errors';
import { CONFIG_TOOL_ALIASES, REMOVED_TOOL_NAMES } from './aliases';
import type { AnyTool, GateEnv, GateResult, ToolRegistry } from './types';

export type { GateResult, ToolRegistry };

export function createToolRegistry(definitions: readonly AnyTool[], env: () => GateEnv): ToolRegistry {
  const removed = new Set<string>(REMOVED_TOOL_NAMES);
  let defs: AnyTool[] = [];
  let results: GateResult[] = [];
  let byName = new Map<string, AnyTool>();
  let byMcp = new Map<string, AnyTool>();

  const check = (list: readonly AnyTool[]) => {
    const seen = new Set<string>();
    for (const tool of list) {
      if (removed.has(tool.name))
        throw new Error(`tool ${tool.name} is a removed name and must not be defined`);
      if (seen.has(tool.name)) throw new Error(`tool ${tool.name} is defined twice`);
      seen.add(tool.name);
    }
  };

  const evaluate = () => {
    const gateEnv = env();
    results = defs.map((tool) => {
      if (!tool.gate) return { tool, registered: true };
      let outcome: true | string;
      try {
        outcome = tool.gate(gateEnv);
      } catch (error) {
        outcome = `gate failed: ${(error as Error).message}`;
      }
      return outcome === true ? { tool, registered: true } : { tool, registered: false, reason: outcome };
    });
    byName = new Map(results.filter((r) => r.registered).map((r) => [r.tool.name, r.tool]));
    byMcp = new Map();
    for (const tool of byName.values()) if (tool.surfaces?.mcp) byMcp.set(tool.surfaces.mcp, tool);
  };

  check(definitions);
  defs = [...definitions];
  // Gates are evaluated on first use, not here: createApp builds the registry before the host
  // its gates read is complete, and a process that calls no tool never evaluates them.
  let evaluated = false;
  const ready = () => {
    if (!evaluated) {
      evaluated = true;
      evaluate();
    }
  };

  const get = (name: string) => {
    ready();
    return byName.get(name) ?? (CONFIG_TOOL_ALIASES[name] ? byName.get('config') : undefined);
  };

  return {
    gates: () => {
      ready();
      return results;
    },
    registered: () => {
      ready();
      return [...byName.values()];
    },
    get,
    require(name) {
      const tool = get(name);
      if (tool) return tool;
      const gated = results.find((r) => r.tool.name === name);
      if (gated) throw new SvcError('not_found', `tool ${name} is not registered: ${gated.reason}`);
      throw new SvcError('not_found', `no tool named ${name}; see list_tool_capabilities`);
    },
    byMcpName: (name) => {
      ready();
      return byMcp.get(name);
    },
    add(tools) {
      const names = new Set(tools.map((t) => t.name));
      defs = [...defs.filter((d) => !names.has(d.name)), ...tools];
      check(defs);
      evaluated = true;
      evaluate();
    },
    remove(predicate) {
      defs = defs.filter((d) => !predicate(d));
      evaluated = true;
      evaluate();
    },
    refresh: () => {
      evaluated = true;
      evaluate();
    },
  };
}
