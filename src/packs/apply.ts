/**
 * What an applied pack changes: the prompt section it adds to the session's system prompt, the
 * tool policy the funnel applies in its agent_policy stage, and the metadata summary the
 * snapshot shows. Policy semantics:
 * - a `deny` rule removes every tool it matches;
 * - when the pack has any `allow` rule, it is an allowlist: a tool no allow rule matches is removed;
 * - deny wins over allow; a pack only narrows, it never adds a tool another stage removed.
 * @module
 */
import type { ToolPolicy } from '../permissions/tool-policy';
import { type PackManifest, toolMatcher } from './manifest';
import type { PackSummary } from './store';

export function summarize(manifest: PackManifest): PackSummary {
  return {
    skills: [...manifest.skills],
    hook_count: manifest.hooks.length,
    policy_rules: manifest.policy.length,
    task_rules: manifest.task_rules.length,
    skill_rules: manifest.skill_rules.length,
    choreography: manifest.choreography,
    has_prompt_preamble: manifest.preamble.trim() !== '',
  };
}

/** The system-prompt section of a pack; undefined when the pack adds no text. */
export function renderPackPrompt(manifest: PackManifest): string | undefined {
  const parts: string[] = [];
  if (manifest.preamble.trim()) parts.push(manifest.preamble.trim());
  if (manifest.task_rules.length) {
    parts.push(
      [
        'Task rules:',
        ...manifest.task_rules.map(
          (r) => `- ${r.name}: ${r.instruction.trim()}${r.when ? ` (applies when: ${r.when.trim()})` : ''}`,
        ),
      ].join('\n'),
    );
  }
  if (manifest.skills.length)
    parts.push(`Skills this operating pack relies on: ${manifest.skills.join(', ')}.`);
  if (manifest.skill_rules.length) {
    parts.push(
      ['Skill rules:', ...manifest.skill_rules.map((r) => `- use ${r.skill} when ${r.when.trim()}`)].join(
        '\n',
      ),
    );
  }
  if (parts.length === 0) return undefined;
  return [`# Operating pack: ${manifest.name}`, ...parts].join('\n\n');
}

export type PolicyMode = 'allowlist' | 'denylist' | 'none';

export function policyMode(manifest: PackManifest): PolicyMode {
  if (manifest.policy.some((r) => r.effect === 'allow')) return 'allowlist';
  return manifest.policy.length ? 'denylist' : 'none';
}

/** The funnel layer of a pack, or undefined when the pack has no policy rules. */
export function packPolicy(manifest: PackManifest): ToolPolicy | undefined {
  if (manifest.policy.length === 0) return undefined;
  const deny = manifest.policy.filter((r) => r.effect === 'deny').map((r) => toolMatcher(r.tool));
  const allow = manifest.policy.filter((r) => r.effect === 'allow').map((r) => toolMatcher(r.tool));
  return {
    source: `pack ${manifest.name}`,
    // The reasons name the stage and the pack, never the rule text.
    removes(tool) {
      if (deny.some((matches) => matches(tool.name))) return 'denied by the operating pack policy';
      if (allow.length && !allow.some((matches) => matches(tool.name))) {
        return 'not in the operating pack allowlist';
      }
      return undefined;
    },
  };
}
