/**
 * Agent kinds: who runs a turn. Built in: `build` (primary, the default, every effective tool),
 * `plan` (primary, read-only: investigates and writes a plan), and the sub-agent kinds `explore`
 * (read-only codebase search) and `general` (a full worker without sub-agents of its own).
 * `[agents.<id>]` config overrides a built-in's fields or adds a kind; its `tools` table narrows
 * the set in the funnel's agent_policy stage.
 * @module
 */
import type { AgentConfig, Config } from '../config/schema';
import { SvcError } from '../errors';
import { stablePolicy, type ToolPolicy } from '../permissions/tool-policy';

export type AgentMode = 'primary' | 'subagent' | 'all';

export interface AgentKind {
  id: string;
  description: string;
  mode: AgentMode;
  builtin: boolean;
  /** Model selector for this kind, when it has one of its own. */
  model: string | null;
  /** Extra instructions appended to the system prompt. */
  prompt: string | null;
  max_steps: number | null;
  reasoning_effort: string | null;
  /** Mutating tools are withheld. */
  read_only: boolean;
  /** `[agents.<id>.tools]` allow/deny, applied by the funnel. */
  tools: { allow?: string[]; deny?: string[] } | null;
}

const PLAN_PROMPT = `You are in plan mode. Investigate with read-only tools: you cannot change files or run commands that mutate anything.
When you understand the task, write a concrete, numbered plan in markdown with set_plan_artifact: the files to change, the changes, and how to verify them (tests, commands).
Then stop and ask the user to review it. The user approves it with /approve or approve_plan; only then does execution start.`;

const EXPLORE_PROMPT = `You are an exploration sub-agent. Find what was asked in the codebase quickly with read-only tools (ls, glob, grep, view).
Answer with the facts the caller needs: file paths with line numbers, short quotes of the relevant code, and a direct answer. Do not propose edits unless asked.`;

const GENERAL_PROMPT = `You are a sub-agent working on one task for another agent. Do the task completely, then answer with a concise report: what you did, what you found, the files you changed, and anything left undone.
Your final message is all the caller sees.`;

const BUILTIN: readonly AgentKind[] = [
  {
    id: 'build',
    description: 'The default agent: reads, edits, runs commands and checkpoints, with every effective tool.',
    mode: 'primary',
    builtin: true,
    model: null,
    prompt: null,
    max_steps: null,
    reasoning_effort: null,
    read_only: false,
    tools: null,
  },
  {
    id: 'plan',
    description:
      'Plan mode: read-only investigation that ends with a plan (set_plan_artifact) for the user to approve.',
    mode: 'primary',
    builtin: true,
    model: null,
    prompt: PLAN_PROMPT,
    max_steps: null,
    reasoning_effort: null,
    read_only: true,
    tools: null,
  },
  {
    id: 'explore',
    description: 'Sub-agent: fast read-only codebase search; answers with paths, lines and facts.',
    mode: 'subagent',
    builtin: true,
    model: null,
    prompt: EXPLORE_PROMPT,
    max_steps: 30,
    reasoning_effort: null,
    read_only: true,
    tools: null,
  },
  {
    id: 'general',
    description: 'Sub-agent: does one self-contained task with the full tool set (no nested sub-agents).',
    mode: 'subagent',
    builtin: true,
    model: null,
    prompt: GENERAL_PROMPT,
    max_steps: null,
    reasoning_effort: null,
    read_only: false,
    tools: null,
  },
];

function fromConfig(id: string, entry: AgentConfig, base: AgentKind | undefined): AgentKind {
  return {
    id,
    description: entry.description ?? base?.description ?? `agent ${id} (from [agents.${id}])`,
    mode: entry.mode ?? base?.mode ?? 'all',
    builtin: base !== undefined,
    model: entry.model ?? base?.model ?? null,
    prompt: entry.prompt ?? base?.prompt ?? null,
    max_steps: entry.max_steps ?? base?.max_steps ?? null,
    reasoning_effort: entry.reasoning_effort ?? base?.reasoning_effort ?? null,
    read_only: entry.read_only ?? base?.read_only ?? false,
    tools: entry.tools
      ? {
          ...(entry.tools.allow ? { allow: entry.tools.allow } : {}),
          ...(entry.tools.deny ? { deny: entry.tools.deny } : {}),
        }
      : null,
  };
}

/** Every agent kind: the built-ins (with their config overrides), then the config-only ones. */
export function agentKinds(config: Config): AgentKind[] {
  // Pushed, not mapped or filtered: an array from TurboFan's inlined `map` or `filter` has another
  // map than the builtin's, and the `sort` and spreads after them deopted the optimized function
  // once (docs/performance-log.md, p-jit).
  const kinds: AgentKind[] = [];
  for (const kind of BUILTIN) {
    kinds.push(config.agents[kind.id] ? fromConfig(kind.id, config.agents[kind.id], kind) : kind);
  }
  const extra: AgentKind[] = [];
  for (const [id, entry] of Object.entries(config.agents)) {
    if (!BUILTIN.some((k) => k.id === id)) extra.push(fromConfig(id, entry, undefined));
  }
  extra.sort((a, b) => a.id.localeCompare(b.id));
  for (const kind of extra) kinds.push(kind);
  return kinds;
}

/** One kind; `use` says what it is for, so a sub-agent kind cannot drive a top-level run. */
export function agentKind(config: Config, id: string, use?: 'primary' | 'subagent'): AgentKind {
  const kinds = agentKinds(config);
  const kind = kinds.find((k) => k.id === id);
  if (!kind) {
    throw new SvcError(
      'invalid_input',
      `agent: no agent kind "${id}"; known kinds: ${kinds.map((k) => k.id).join(', ')} (or add [agents.${id}] to svc.toml)`,
    );
  }
  if (use && kind.mode !== 'all' && kind.mode !== use) {
    const usable = kinds.filter((k) => k.mode === 'all' || k.mode === use).map((k) => k.id);
    throw new SvcError(
      'invalid_input',
      `agent: "${id}" is a ${kind.mode} agent and cannot be used as a ${use} one; use one of ${usable.join(', ')}`,
    );
  }
  return kind;
}

/** Withholds the sub-agent's workflow tools (one object: the effective set is kept per policy). */
const SUBAGENT_POLICY: ToolPolicy = stablePolicy({
  source: 'sub-agent',
  removes: (tool) =>
    tool.tag === 'workflow' ? 'sub-agents do not start sub-agents or workflows of their own' : undefined,
});
/** A read-only kind's policy, one object per kind id. */
const readOnlyPolicies = new Map<string, ToolPolicy>();

/** Tool policies a kind adds to the funnel (agent_policy stage), beyond `[agents.<id>.tools]`. */
export function kindPolicies(kind: AgentKind, options: { subagent?: boolean } = {}): ToolPolicy[] {
  const policies: ToolPolicy[] = [];
  if (kind.read_only) {
    let policy = readOnlyPolicies.get(kind.id);
    if (!policy) {
      policy = stablePolicy({
        source: `agent ${kind.id}`,
        removes: (tool) => (tool.mutates ? 'read-only agent kind: mutating tools are withheld' : undefined),
      });
      readOnlyPolicies.set(kind.id, policy);
    }
    policies.push(policy);
  }
  if (options.subagent) policies.push(SUBAGENT_POLICY);
  return policies;
}
