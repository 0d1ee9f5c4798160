/**
 * Per-App state of the compat surface, registered once on first use: the tool policy layer
 * (`options.openai_compat.tool_policy`, CFG-26/COMPAT-17) and the prompt section that carries the
 * client's `system` messages. Both apply to a session only while a compat request runs in it (or
 * in its root session, for sub-agents), so other clients of the same session are not affected.
 * @module
 */
import type { App } from '../../../app';
import { stablePolicy, type ToolFacts, type ToolPolicy } from '../../../permissions/tool-policy';

export type CompatToolPolicy = 'none' | 'read_only' | 'allowed_tools' | 'all';

export interface CompatRuntime {
  /** Mark a session as serving a compat request; returns the release function. */
  enter(sessionId: string, system: string): () => void;
  /** The policy layer for a tool, or undefined when the policy lets it through. */
  denies(tool: ToolFacts): string | undefined;
}

const runtimes = new WeakMap<App, CompatRuntime>();

export function toolPolicyOf(app: App): { policy: CompatToolPolicy; source: 'config' | 'default' } {
  const compat = app.config.options.openai_compat;
  return compat
    ? { policy: compat.tool_policy, source: 'config' }
    : { policy: 'read_only', source: 'default' };
}

/** Why the policy removes a tool from a compat-originated run, or undefined. */
export function policyDenies(app: App, tool: ToolFacts): string | undefined {
  const { policy } = toolPolicyOf(app);
  switch (policy) {
    case 'all':
      return undefined;
    case 'none':
      return 'options.openai_compat.tool_policy is none: compat requests run no tools';
    case 'read_only':
      return tool.mutates
        ? 'options.openai_compat.tool_policy is read_only: compat requests run only tools that do not mutate'
        : undefined;
    case 'allowed_tools':
      return app.config.permissions.allowed_tools.includes(tool.name)
        ? undefined
        : 'options.openai_compat.tool_policy is allowed_tools: not in [permissions].allowed_tools';
    default: {
      const exhaustive: never = policy;
      return `unknown tool policy ${String(exhaustive)}`;
    }
  }
}

export function compatRuntime(app: App): CompatRuntime {
  let runtime = runtimes.get(app);
  if (runtime) return runtime;
  const active = new Map<string, number>();
  const systems = new Map<string, string>();
  const rootOf = async (sessionId: string) => {
    try {
      return await app.sessions.root(sessionId);
    } catch {
      return sessionId;
    }
  };
  // Its answer depends on the tool and the config only: the effective set under it is kept.
  const layer: ToolPolicy = stablePolicy({
    source: 'openai_compat.tool_policy',
    removes: (tool) => policyDenies(app, tool),
  });
  // A compat request's own session is active itself: no read of its root (two statements a
  // request); a sub-agent's session is found through its root.
  const none: ToolPolicy[] = [];
  const mine = [layer];
  app.policyProviders.push((sessionId) => {
    if (!sessionId || active.size === 0) return none;
    if (active.has(sessionId)) return mine;
    return rootOf(sessionId).then((root) => (active.has(root) ? mine : none));
  });
  app.agent.addPromptSection((sessionId) => {
    const text = systems.get(sessionId);
    return text
      ? {
          source: 'openai_compat.system',
          text: `# Client instructions\nThe chat-completions client sent these system messages:\n\n${text}`,
        }
      : undefined;
  });
  runtime = {
    enter(sessionId, system) {
      active.set(sessionId, (active.get(sessionId) ?? 0) + 1);
      if (system) systems.set(sessionId, system);
      let released = false;
      return () => {
        if (released) return;
        released = true;
        const left = (active.get(sessionId) ?? 1) - 1;
        if (left <= 0) {
          active.delete(sessionId);
          systems.delete(sessionId);
        } else active.set(sessionId, left);
      };
    },
    denies: (tool) => policyDenies(app, tool),
  };
  runtimes.set(app, runtime);
  return runtime;
}
