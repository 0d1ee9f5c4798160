/**
 * The agent's toolbox (the port `agent/toolbox.ts` declares), over the registry, the funnel and
 * `callTool`: a model's tool call goes through the same gate → validation → permission → run →
 * redaction path as every surface's, and the answer becomes the text the model reads.
 * @module
 */
import type { AgentToolbox, AgentToolSpec } from '../../agent/toolbox';
import { callTool } from './call-tool';
import { effectiveTools } from './funnel';
import { inputSchemaOf } from './input-schema';
import type { AnyTool, ToolHost } from './types';

/** The toolbox over one host (a run's host: the App, or its view of a worktree). */
export function createAgentToolbox(host: ToolHost): AgentToolbox {
  return {
    effective: (context) => effectiveTools(host.tools, host.config, context).map(specOf),
    registered: () => host.tools.registered().map(specOf),
    get(name) {
      const tool = host.tools.get(name);
      return tool ? specOf(tool) : undefined;
    },
    async concurrent(name, sessionId) {
      try {
        return (await host.tools.get(name)?.concurrent?.({ app: host, sessionId })) === true;
      } catch {
        return false;
      }
    },
    async call(name, input, context) {
      const { gate, ...rest } = context;
      const outcome = await callTool(
        host,
        name,
        input,
        { surface: 'agent', ...rest, progress: () => {} },
        gate ? { gate: (tool) => gate(tool.name) } : {},
      );
      if (outcome.ok) return { ok: true, text: modelText(outcome.tool, outcome.value) };
      return { ok: false, error: outcome.error, crashed: outcome.crashed === true };
    },
  };
}

const specs = new WeakMap<AnyTool, AgentToolSpec>();

/** The spec of a tool definition: one object per definition, so the agent can cache by it. */
function specOf(tool: AnyTool): AgentToolSpec {
  let spec = specs.get(tool);
  if (!spec) {
    spec = {
      name: tool.name,
      family: tool.family,
      description: tool.description,
      inputSchema: inputSchemaOf(tool),
    };
    specs.set(tool, spec);
  }
  return spec;
}

/** Text the model reads of a result: the tool's own rendering, else the JSON. */
function modelText(tool: AnyTool, result: unknown): string {
  if (tool.toModelOutput) return tool.toModelOutput(result);
  if (typeof result === 'string') return result;
  return JSON.stringify(result ?? null);
}

/**
 * The host as a run against another checkout sees it: the same services, with `workspace` and `ws`
 * replaced (spawn_worktree_override). Everything else is read through to the real host.
 */
export function withWorkspace<H extends ToolHost>(
  host: H,
  workspace: { root: string; ws: ToolHost['ws'] },
): H {
  return Object.create(host, {
    workspace: { value: workspace.root, enumerable: true },
    ws: { value: workspace.ws, enumerable: true },
  }) as H;
}
