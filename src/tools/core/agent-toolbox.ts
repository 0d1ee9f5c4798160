/**
 * The agent's toolbox (the port `agent/toolbox.ts` declares), over the registry, the funnel and
 * `callTool`: a model's tool call goes through the same gate → validation → permission → run →
 * redaction path as every surface's, and the answer becomes the text the model reads.
 * @module
 */
import type { AgentToolbox, AgentToolSpec } from '../../agent/toolbox';
import type { Config } from '../../config/schema';
import type { Logger } from '../../log';
import { type FunnelContext, isStablePolicy, type ToolPolicy } from '../../permissions/tool-policy';
import { callTool } from './call-tool';
import { effectiveTools } from './funnel';
import { inputSchemaOf } from './input-schema';
import type { AnyTool, GateResult, ToolHost, ToolRegistry } from './types';

/** The toolbox over one host (a run's host: the App, or its view of a worktree). */
export function createAgentToolbox(host: ToolHost): AgentToolbox {
  return {
    effective: (context) => effectiveSpecs(host.tools, host.config, context, host.log),
    registered: () => registeredSpecs(host.tools, host.log),
    get(name) {
      const tool = host.tools.get(name);
      return tool ? specOf(tool, host.log) : undefined;
    },
    async concurrent(name, sessionId) {
      try {
        return (await host.tools.get(name)?.concurrent?.({ app: host, sessionId })) === true;
      } catch {
        return false;
      }
    },
    async call(name, input, context) {
      const { gate, ahead, ...rest } = context;
      const outcome = await callTool(
        ahead ? withPendingSession(host, context.sessionId, ahead) : host,
        name,
        input,
        { surface: 'agent', ...rest, ...(ahead ? { ahead } : {}), progress: () => {} },
        gate ? { gate: (tool) => gate(tool.name) } : {},
      );
      if (outcome.ok) return { ok: true, text: modelText(outcome.tool, outcome.value) };
      return { ok: false, error: outcome.error, crashed: outcome.crashed === true };
    },
  };
}

/**
 * The effective tool sets already computed, per registry state (its gates array, new whenever the
 * gates are evaluated again: an MCP server's tools added or removed, a refresh) and config (a new
 * object on every reload), then per funnel context. Every run asks before its first step and
 * before each step (every compat request is a run), and the answer only changes with those.
 */
const effectiveCache = new WeakMap<GateResult[], WeakMap<Config, Map<string, readonly AgentToolSpec[]>>>();
/** Contexts kept per registry state and config; past it the map starts over. */
const EFFECTIVE_CONTEXTS = 64;
const policyIds = new WeakMap<ToolPolicy, number>();
let nextPolicyId = 0;

/** The funnel context as a key, or undefined when a policy is not stable (then no cache). */
function contextKey(context: FunnelContext): string | undefined {
  const ids: number[] = [];
  for (const policy of context.policies ?? []) {
    if (!isStablePolicy(policy)) return undefined;
    let id = policyIds.get(policy);
    if (id === undefined) {
      id = nextPolicyId++;
      policyIds.set(policy, id);
    }
    ids.push(id);
  }
  // `yolo` only changes a tool's permission, not whether it is effective.
  return `${context.mode ?? ''}\0${context.phase ?? ''}\0${context.agent ?? ''}\0${ids.join(',')}`;
}

/** The effective tools' specs (the funnel), kept while the registry, config and context stay. */
function effectiveSpecs(
  registry: ToolRegistry,
  config: Config,
  context: FunnelContext,
  log: Logger,
): readonly AgentToolSpec[] {
  const key = contextKey(context);
  if (key === undefined) return specsOf(effectiveTools(registry, config, context), log);
  const state = registry.gates();
  let byConfig = effectiveCache.get(state);
  if (!byConfig) {
    byConfig = new WeakMap();
    effectiveCache.set(state, byConfig);
  }
  let byContext = byConfig.get(config);
  if (!byContext) {
    byContext = new Map();
    byConfig.set(config, byContext);
  }
  let specs = byContext.get(key);
  if (!specs) {
    specs = Object.freeze(specsOf(effectiveTools(registry, config, context), log));
    if (byContext.size >= EFFECTIVE_CONTEXTS) byContext.clear();
    byContext.set(key, specs);
  }
  return specs;
}

/**
 * The registered tools' specs per registry state (its gates array, new whenever the gates are
 * evaluated again), one frozen array: every run asked for them before its first step (every
 * compat request is a run), ≈ 150 spec look-ups and a new array each time (issue 17 item 3).
 */
const registeredCache = new WeakMap<GateResult[], readonly AgentToolSpec[]>();

function registeredSpecs(registry: ToolRegistry, log: Logger): readonly AgentToolSpec[] {
  const state = registry.gates();
  let list = registeredCache.get(state);
  if (!list) {
    list = Object.freeze(specsOf(registry.registered(), log));
    registeredCache.set(state, list);
  }
  return list;
}

/** Per definition its spec, or null when its input schema cannot be converted (left out). */
const specs = new WeakMap<AnyTool, AgentToolSpec | null>();

/**
 * The spec of a tool definition: one object per definition, so the agent can cache by it. A tool
 * whose input schema cannot be converted to JSON Schema (a peer's schema, a plugin's) has none: it
 * is left out of what the model sees, logged once, and every other tool and run goes on.
 */
function specOf(tool: AnyTool, log: Logger): AgentToolSpec | undefined {
  let spec = specs.get(tool);
  if (spec === undefined) {
    try {
      spec = {
        name: tool.name,
        family: tool.family,
        description: tool.description,
        inputSchema: inputSchemaOf(tool),
        ...(tool.readsOnly ? { readsOnly: true as const } : {}),
      };
    } catch (error) {
      log.warn('tool left out: its input schema cannot be converted to JSON Schema', {
        tool: tool.name,
        family: tool.family,
        error,
      });
      spec = null;
    }
    specs.set(tool, spec);
  }
  return spec ?? undefined;
}

/** The specs of these tools, without the ones that have none. */
function specsOf(tools: readonly AnyTool[], log: Logger): AgentToolSpec[] {
  const list: AgentToolSpec[] = [];
  for (const tool of tools) {
    const spec = specOf(tool, log);
    if (spec) list.push(spec);
  }
  return list;
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

/**
 * The host as a call run ahead of its step's first statement (`statement`) sees it
 * (`AgentCallContext.ahead`): a read of the run's own session answers the row as that statement
 * will store it while it is in flight (`SessionStore.pending`; the call's result is recorded only
 * if the statement succeeds), else waits for the statement to answer (or fail) and reads then.
 * Every other read, and every other caller, goes to the store as before.
 */
function withPendingSession<H extends ToolHost>(host: H, sessionId: string, statement: Promise<void>): H {
  const sessions = host.sessions;
  const pending = sessions.pending;
  if (!pending) return host;
  const after = () => statement.catch(() => {});
  const own = Object.create(sessions, {
    get: {
      value: (id: string) => {
        if (id !== sessionId) return sessions.get(id);
        const row = pending(id);
        return row ? Promise.resolve(row) : after().then(() => sessions.get(id));
      },
    },
    require: {
      value: (id: string) => {
        if (id !== sessionId) return sessions.require(id);
        const row = pending(id);
        return row ? Promise.resolve(row) : after().then(() => sessions.require(id));
      },
    },
  }) as H['sessions'];
  return Object.create(host, { sessions: { value: own, enumerable: true } }) as H;
}
