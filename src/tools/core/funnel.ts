/**
 * The funnel: the effective tool set of a session, narrowed in this order by gates (registered at
 * all?), session mode (and the staged-workflow phase), `options.disabled_tools`,
 * `[agents.<id>.tools]` policy (and active pack policy), then permissions, where
 * `[permissions].allowed_tools` only skips the prompt and never adds a tool.
 * Every entry says which stage removed a tool, so "where did my tool go?" has one answer.
 * @module
 */
import type { Config } from '../../config/schema';
import type {
  FunnelContext,
  FunnelEntry,
  FunnelStage,
  SessionMode,
  ToolPolicy,
} from '../../permissions/tool-policy';
import { canonicalToolName } from './aliases';
import type { AnyTool, ToolRegistry } from './types';

export type { FunnelContext, FunnelEntry, FunnelStage, SessionMode, ToolPolicy };

export const FUNNEL_STAGES: readonly FunnelStage[] = [
  'gate',
  'mode',
  'disabled_tools',
  'agent_policy',
  'permissions',
];

export function runFunnel(
  registry: ToolRegistry,
  config: Config,
  context: FunnelContext = {},
): FunnelEntry[] {
  const disabled = new Set(config.options.disabled_tools.map(canonicalToolName));
  const allowed = new Set(config.permissions.allowed_tools);
  const agentTools = context.agent ? config.agents[context.agent]?.tools : undefined;
  const mode = context.mode ?? 'build';

  return registry.gates().map(({ tool, registered, reason }) => {
    const entry: FunnelEntry = {
      name: tool.name,
      family: tool.family,
      tag: tool.tag,
      mutates: tool.mutates,
      registered,
      effective: false,
      removed_by: null,
      reason: null,
      permission: null,
      permission_reason: null,
    };
    const remove = (stage: FunnelStage, why: string) => {
      entry.removed_by = stage;
      entry.reason = why;
      return entry;
    };
    if (!registered) return remove('gate', reason ?? 'gate closed');
    if (tool.mutates && mode === 'plan') return remove('mode', 'session mode plan is read-only');
    if (tool.mutates && context.phase === 'planning') {
      return remove(
        'mode',
        'staged workflow is in the planning phase; approve the plan (approve_plan or /approve) to execute',
      );
    }
    if (disabled.has(tool.name)) return remove('disabled_tools', 'listed in options.disabled_tools');
    if (agentTools) {
      const why = agentPolicyRemoves(tool.name, agentTools, context.agent!);
      if (why) return remove('agent_policy', why);
    }
    for (const policy of context.policies ?? []) {
      const why = policy.removes(tool);
      if (why) return remove('agent_policy', `${policy.source}: ${why}`);
    }
    entry.effective = true;
    if (!tool.mutates) {
      entry.permission = 'allow';
      entry.permission_reason = 'does not mutate';
    } else if (allowed.has(tool.name)) {
      entry.permission = 'allow';
      entry.permission_reason = 'listed in permissions.allowed_tools';
    } else if (context.yolo) {
      entry.permission = 'allow';
      entry.permission_reason = 'permissions skipped (--yolo)';
    } else {
      entry.permission = 'ask';
      entry.permission_reason = 'mutating tool: asks the operator';
    }
    return entry;
  });
}

function agentPolicyRemoves(
  name: string,
  tools: NonNullable<Config['agents'][string]['tools']>,
  agent: string,
): string | undefined {
  if (tools.allow && !tools.allow.includes(name)) return `not in agents.${agent}.tools.allow`;
  if (tools.deny?.map(canonicalToolName).includes(name)) return `listed in agents.${agent}.tools.deny`;
  if ((tools as Record<string, unknown>)[name] === false) return `agents.${agent}.tools.${name} = false`;
  return undefined;
}

/** The tools the agent actually gets. */
export function effectiveTools(
  registry: ToolRegistry,
  config: Config,
  context: FunnelContext = {},
): AnyTool[] {
  const names = new Set(
    runFunnel(registry, config, context)
      .filter((e) => e.effective)
      .map((e) => e.name),
  );
  return registry.registered().filter((t) => names.has(t.name));
}
