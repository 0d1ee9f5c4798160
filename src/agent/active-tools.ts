/**
 * A run's active tools as names: the Set its tool bridge checks calls against, and the list the
 * step driver gets. Kept one per effective tool array (see `activeNames`), so a step's request
 * work keyed by them is done once per tool set, not once a step.
 * @module
 */
import type { AgentToolSpec } from './toolbox';

/**
 * The step's active tools for the SDK: undefined when every tool of the stream's tool set is
 * active (the usual case), so the SDK uses its whole set instead of filtering it by name on every
 * step (two passes with `Array.includes` over ~150 names each).
 */
export function activeList(
  active: ReadonlySet<string>,
  tools: readonly AgentToolSpec[],
): string[] | undefined {
  if (tools.every((tool) => active.has(tool.name))) return undefined;
  let list = activeLists.get(active);
  if (!list) {
    list = [...active];
    activeLists.set(active, list);
  }
  return list;
}

/**
 * The names of a run's effective tools. The toolbox answers the same array for the same registry,
 * config and funnel context (every compat request, every step), so its names are one Set per such
 * array, and that Set's list for the SDK one array: the step driver keys its own work by that
 * array (./step-driver.ts `activeSet`), not ~150 names copied and filtered on every step.
 * Neither is ever changed (the run turn holds the Set read-only).
 */
export function activeNames(effective: readonly AgentToolSpec[]): ReadonlySet<string> {
  let names = activeSets.get(effective);
  if (!names) {
    names = new Set(effective.map((tool) => tool.name));
    activeSets.set(effective, names);
  }
  return names;
}
const activeSets = new WeakMap<readonly AgentToolSpec[], ReadonlySet<string>>();
const activeLists = new WeakMap<ReadonlySet<string>, string[]>();
