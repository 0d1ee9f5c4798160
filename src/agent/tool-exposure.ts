/**
 * Which of the effective tools a model request carries in full. The registry has well over a
 * hundred tools (readouts, workflows, lifecycle…) and their schemas are tens of thousands of
 * tokens: sent on every step they crowd a small context window and cost a lot on a large one.
 *
 * `options.tool_exposure`:
 * - `all`: every effective tool is sent with its schema;
 * - `deferred`: the core coding tools (files, shell, web, edit, search, todos, sub-agents,
 *   checkpoints, plans), MCP tools and every tool already called in the run are sent in full; the
 *   other effective tools are listed by name with one line each in the system prompt. The model
 *   can call a listed tool by name at once (the call is checked against its schema, and a bad
 *   input comes back as a tool error naming the fields); from then on the tool is sent in full;
 * - `auto` (default): `all` when the schemas of the effective tools take at most a tenth of the
 *   model's context window; else `deferred` when the core tools fit in that tenth; else (a small
 *   window, or no known window: a local model whose server did not tell, see
 *   src/providers/context-window.ts) the `essential` level of `deferred`: only the essential
 *   coding tools (view, write, edit, ls, glob, grep, bash, fetch, todos, agent, set_plan_artifact), the MCP tools and the
 *   tools already called go in full, and the others are listed by name only (their descriptions
 *   are one `list_tool_capabilities` call away). The whole set is ≈30k tokens, more than many
 *   local servers' whole default window.
 *
 * The funnel is untouched: a deferred tool is in the effective set, callable and reported as such.
 * @module
 */
import { sameItems } from '../util/arrays';
import type { AgentToolSpec } from './toolbox';

export type ToolExposure = 'auto' | 'all' | 'deferred';

/** Share of the context window the tool schemas may take before `auto` defers. */
export const AUTO_DEFER_SHARE = 0.1;

const CORE_FAMILIES = new Set(['core-files', 'core-shell', 'core-web', 'core-code', 'semantic']);
const CORE_NAMES = new Set([
  'todos',
  'agent',
  'checkpoint_create',
  'checkpoint_list',
  'checkpoint_restore',
  'set_plan_artifact',
  'get_plan',
  'get_workflow_phase',
]);

/** Sent in full whatever the exposure: the tools a coding turn needs, and the user's MCP tools. */
export function isCoreTool(tool: AgentToolSpec): boolean {
  return CORE_FAMILIES.has(tool.family) || CORE_NAMES.has(tool.name) || isMcpTool(tool);
}

const tokenCache = new WeakMap<AgentToolSpec, number>();

/** Rough token count of a tool as a request carries it (name, description, JSON schema). */
export function toolTokens(tool: AgentToolSpec): number {
  let tokens = tokenCache.get(tool);
  if (tokens === undefined) {
    tokens = Math.ceil(
      (tool.name.length + tool.description.length + JSON.stringify(tool.inputSchema).length) / 4,
    );
    tokenCache.set(tool, tokens);
  }
  return tokens;
}

/** How much of the effective set a request carries in full (see the module comment). */
export type ExposureLevel = 'all' | 'deferred' | 'essential';

// agent: sub-agents (a fan_out choreography relies on it); set_plan_artifact: the one tool a plan
// agent must call.
const ESSENTIAL_NAMES = new Set([
  'view',
  'write',
  'edit',
  'ls',
  'glob',
  'grep',
  'bash',
  'fetch',
  'todos',
  'agent',
  'set_plan_artifact',
]);

/** A user's MCP tool (`mcp_<server>_<tool>`), not svc's own `mcp_status`. */
function isMcpTool(tool: AgentToolSpec): boolean {
  return tool.name.startsWith('mcp_') && tool.family !== 'mcp';
}

/** Whether a tool travels with its schema at this level (before any call made it so). */
export function sentInFull(tool: AgentToolSpec, level: ExposureLevel): boolean {
  if (level === 'all') return true;
  if (level === 'deferred') return isCoreTool(tool);
  return ESSENTIAL_NAMES.has(tool.name) || isMcpTool(tool);
}

const filters = new WeakMap<object, Map<ExposureLevel, (name: string) => boolean>>();

/**
 * Whether a tool goes in full at `level`, by name, for the tools `specs` (a name not among them:
 * yes). One function per `key` (the run's tool set, shared by the runs with the same specs,
 * ./tool-bridge.ts) and level: the step driver keeps the step's tool list by it
 * (./step-request.ts `requestTools`), so a step does not ask for every tool again.
 */
export function inFullAt(
  key: object,
  specs: readonly AgentToolSpec[],
  level: ExposureLevel,
): (name: string) => boolean {
  let byLevel = filters.get(key);
  if (!byLevel) {
    byLevel = new Map();
    filters.set(key, byLevel);
  }
  let filter = byLevel.get(level);
  if (!filter) {
    const known = new Set(specs.map((tool) => tool.name));
    const full = new Set(specs.filter((tool) => sentInFull(tool, level)).map((tool) => tool.name));
    filter = (name) => full.has(name) || !known.has(name);
    byLevel.set(level, filter);
  }
  return filter;
}

const tokensOf = (tools: readonly AgentToolSpec[]) => tools.reduce((sum, tool) => sum + toolTokens(tool), 0);

/**
 * The schema tokens of a tool list and of its core tools, per list (issue 17 item 3): every run
 * of the same tool set gets the same effective list (`AgentToolbox.effective` keeps it per
 * registry state, config and funnel context, frozen), so the sums are made once per list, not
 * once per compat request. Only a frozen list is kept (specs never change once registered).
 */
const tokenSums = new WeakMap<readonly AgentToolSpec[], { all: number; core?: number }>();

function tokenSumsOf(tools: readonly AgentToolSpec[]): { all: number; core?: number } {
  let sums = tokenSums.get(tools);
  if (!sums) {
    sums = { all: tokensOf(tools) };
    if (Object.isFrozen(tools)) tokenSums.set(tools, sums);
  }
  return sums;
}

/** The level of this run: `mode` as configured, `auto` decided against the context window. */
export function exposureLevel(
  mode: ToolExposure,
  tools: readonly AgentToolSpec[],
  contextWindow: number,
): ExposureLevel {
  if (mode === 'all') return 'all';
  if (mode === 'deferred') return 'deferred';
  if (contextWindow <= 0) return 'essential';
  const budget = contextWindow * AUTO_DEFER_SHARE;
  const sums = tokenSumsOf(tools);
  if (sums.all <= budget) return 'all';
  sums.core ??= tokensOf(tools.filter(isCoreTool));
  return sums.core <= budget ? 'deferred' : 'essential';
}

/** The deferred lists made, per effective list and level (`deferredSpecs`). */
const deferredLists = new WeakMap<readonly AgentToolSpec[], Map<ExposureLevel, readonly AgentToolSpec[]>>();

/**
 * The tools of `effective` that do not travel in full at `level` (before any call made them so),
 * in its order. For a frozen effective list (the toolbox's kept one) made once per list and level
 * and then the same frozen array: every compat request of a service asked `sentInFull` about each
 * of its ≈ 150 tools again.
 */
export function deferredSpecs(
  effective: readonly AgentToolSpec[],
  level: ExposureLevel,
): readonly AgentToolSpec[] {
  let byLevel = deferredLists.get(effective);
  if (!byLevel) {
    byLevel = new Map();
    if (Object.isFrozen(effective)) deferredLists.set(effective, byLevel);
  }
  let list = byLevel.get(level);
  if (!list) {
    const deferred: AgentToolSpec[] = [];
    for (const tool of effective) if (!sentInFull(tool, level)) deferred.push(tool);
    list = Object.freeze(deferred);
    byLevel.set(level, list);
  }
  return list;
}

/**
 * The system prompt block that lists the deferred tools: one line each, or at the `essential`
 * level their names only; undefined when none.
 */
export function deferredToolsBlock(
  deferred: readonly AgentToolSpec[],
  level: ExposureLevel = 'deferred',
): string | undefined {
  if (deferred.length === 0) return undefined;
  // Every run of a service lists the same tools (the same spec objects): the text made last.
  const hit = lastBlock;
  if (hit?.level === level && (hit.deferred === deferred || sameItems(hit.deferred, deferred)))
    return hit.text;
  const text = blockText(deferred, level);
  lastBlock = { deferred: Object.isFrozen(deferred) ? deferred : [...deferred], level, text };
  return text;
}

/** The last listing made, by the tools it lists (a spec is never changed once registered). */
let lastBlock: { deferred: readonly AgentToolSpec[]; level: ExposureLevel; text: string } | undefined;

function blockText(deferred: readonly AgentToolSpec[], level: ExposureLevel): string {
  if (level === 'essential') {
    return [
      '# More tools',
      `These ${deferred.length} tools are available too; their schemas are not in this request to save context. Call one by name: a wrong argument comes back as an error naming the fields, and from then on the tool is sent with its full schema. list_tool_capabilities describes them all.`,
      toolNames(deferred),
    ].join('\n');
  }
  const lines = deferred.map((tool) => `- ${tool.name}: ${firstSentence(tool.description)}`);
  return [
    '# More tools',
    'These tools are available too. Their schemas are not in this request to save context: call one by name with the arguments its description suggests; a wrong argument comes back as an error naming the fields, and from then on the tool is sent with its full schema.',
    ...lines,
  ].join('\n');
}

/** Pushed, not mapped: `deferred.map(…)` on the caller's filtered list deopted the optimized prepareRun once (p-jit). */
function toolNames(tools: readonly AgentToolSpec[]): string {
  const names: string[] = [];
  for (const tool of tools) names.push(tool.name);
  return names.join(', ');
}

function firstSentence(text: string): string {
  const line = text.replace(/\s+/g, ' ').trim();
  const end = line.search(/[.:;](\s|$)/);
  const sentence = end > 0 ? line.slice(0, end) : line;
  return sentence.length > 140 ? `${sentence.slice(0, 139)}…` : sentence;
}
