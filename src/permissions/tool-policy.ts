/**
 * The vocabulary of tool policy, owned here so the domains that narrow a session's tool set
 * (agent kinds, operating packs, workflows, recipes) never import the tool layer: the facts a
 * policy looks at, a policy layer, and the funnel's context and report rows. The funnel itself
 * (`tools/core/funnel.ts`) applies them to the registry.
 * @module
 */

export type ToolTag = 'primitive' | 'workflow';

/** What a policy may look at of a tool: its name, family, tag and whether it mutates. */
export interface ToolFacts {
  name: string;
  /** Family from native-tools.tsv (core-files, runs, status, …). */
  family: string;
  tag: ToolTag;
  mutates: boolean;
}

export interface ToolPolicy {
  /** Where the rule comes from: `pack my-pack`, `sub-agent`. */
  source: string;
  /** A reason string when the policy removes the tool. */
  removes(tool: ToolFacts): string | undefined;
}

/**
 * What a run's start tells the providers of a session's policy layers and prompt sections
 * (`App.policyProviders`, `App.promptSections`) for its preparation and first step. `inserted`:
 * the session's row went in with the run's own start statement (a new compat session's lone
 * start on PostgreSQL, p-pgstart2), so nothing keyed by the session (an operating pack's row,
 * which references it) was committed before the run started: a provider answers without a read.
 */
export interface SessionStart {
  inserted: true;
}

/** Session modes. `plan` (and the planning phase) withhold tools that mutate. */
export type SessionMode = 'build' | 'plan';

export type FunnelStage = 'gate' | 'mode' | 'disabled_tools' | 'agent_policy' | 'permissions';

export interface FunnelContext {
  mode?: SessionMode | string;
  /** Staged workflow phase; `planning` withholds mutating tools. */
  phase?: string;
  agent?: string;
  /** --yolo / --dangerously-skip-permissions: every prompt is skipped. */
  yolo?: boolean;
  /** Extra policy layers applied in the agent_policy stage (active pack rules, sub-agent narrowing). */
  policies?: ToolPolicy[];
}

export interface FunnelEntry {
  name: string;
  family: string;
  tag: ToolTag;
  mutates: boolean;
  registered: boolean;
  effective: boolean;
  removed_by: FunnelStage | null;
  reason: string | null;
  /** For effective tools: allow (no prompt) or ask. Null when the tool is not effective. */
  permission: 'allow' | 'ask' | null;
  permission_reason: string | null;
}

/** The names of the effective tools of a funnel report, in registry order. */
export function effectiveNames(entries: readonly FunnelEntry[]): string[] {
  return entries.filter((entry) => entry.effective).map((entry) => entry.name);
}

/** A short human title of a call, for prompts and UIs: `view src/a.ts`, `bash: npm test`. */
export function callTitle(tool: string, input: unknown): string {
  if (input && typeof input === 'object') {
    const record = input as Record<string, unknown>;
    if (typeof record.command === 'string') return `${tool}: ${oneLine(record.command, 100)}`;
    for (const key of TITLE_KEYS) {
      if (typeof record[key] === 'string') return `${tool} ${oneLine(record[key] as string, 100)}`;
    }
  }
  return tool;
}

const TITLE_KEYS = [
  'path',
  'file_path',
  'url',
  'pattern',
  'query',
  'description',
  'session_id',
  'run_id',
  'action',
] as const;

/** Whitespace folded to single spaces, cut to `max` characters with an ellipsis. */
export function oneLine(text: string, max: number): string {
  const line = text.replace(/\s+/g, ' ').trim();
  return line.length > max ? `${line.slice(0, max - 1)}…` : line;
}

const stablePolicies = new WeakSet<ToolPolicy>();

/**
 * Mark a policy whose answer depends only on the tool's facts and the loaded config (no session,
 * clock or other state): the agent's effective tool set under it is kept per registry state and
 * config instead of running the funnel for every run (`tools/core/agent-toolbox.ts`). A policy
 * that is not marked is asked every time. Returns the policy.
 */
export function stablePolicy<P extends ToolPolicy>(policy: P): P {
  stablePolicies.add(policy);
  return policy;
}

/** Whether `stablePolicy` marked this policy. */
export function isStablePolicy(policy: ToolPolicy): boolean {
  return stablePolicies.has(policy);
}
