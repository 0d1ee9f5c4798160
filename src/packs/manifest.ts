/**
 * Operating pack manifests (`pack.toml`): parse, validate into diagnostics, apply preset
 * overrides. Validation is strict (an unknown key is an error: a misspelled `[[polcy]]` must not
 * silently drop a deny rule) and its messages never echo a value from the manifest, so preamble
 * text, hook commands and policy details cannot leak through diagnostics.
 * @module
 */
import { createHash } from 'node:crypto';
import { parse as parseToml, TomlError } from 'smol-toml';
import type { SessionEventType } from '../events/types';

export type DiagnosticLevel = 'error' | 'warning';

/** spec, Operating mode snapshot: `diagnostics[]` objects (redacted by the serializer too). */
export interface PackDiagnostic {
  section: string;
  field: string;
  level: DiagnosticLevel;
  message: string;
}

/** Bus events a hook may run on (spec-named events and the session event catalog). */
export const HOOK_EVENTS = [
  'run.started',
  'run.finished',
  'tool.started',
  'tool.finished',
  'message.completed',
  'permission.requested',
  'permission.resolved',
  'loop.detected',
  'compaction.started',
  'compaction.finished',
  'file.changed',
  'workflow.phase_changed',
  'plan.updated',
  'provider_recovery.changed',
] as const satisfies readonly SessionEventType[];
export type HookEvent = (typeof HOOK_EVENTS)[number];

/** Choreography presets a pack may ask for (the adaptive-orchestration genome reads it). */
export const CHOREOGRAPHY_PRESETS = ['solo', 'plan_then_execute', 'executor_reviewer', 'fan_out'] as const;
export type ChoreographyPreset = (typeof CHOREOGRAPHY_PRESETS)[number];

export interface PackHook {
  event: HookEvent;
  command: string;
  /** Only for tool.* events: run when this tool (or glob) is the one started/finished. */
  tool?: string;
  timeout_seconds: number;
}

export interface PackPolicyRule {
  /** Tool name or glob (`*`, `?`), matched against canonical tool names. */
  tool: string;
  effect: 'allow' | 'deny';
}

export interface PackTaskRule {
  name: string;
  instruction: string;
  when?: string;
}

export interface PackSkillRule {
  skill: string;
  when: string;
}

export interface PackManifest {
  name: string;
  description: string;
  preamble: string;
  skills: string[];
  hooks: PackHook[];
  policy: PackPolicyRule[];
  task_rules: PackTaskRule[];
  skill_rules: PackSkillRule[];
  choreography: ChoreographyPreset | '';
}

export interface ParsedManifest {
  /** Undefined when any diagnostic is an error. */
  manifest?: PackManifest;
  diagnostics: PackDiagnostic[];
  /** sha256 of the manifest text (first 16 hex chars). */
  digest: string;
}

export interface ValidateOptions {
  /** The directory name of a discovered pack: `name` must equal it. */
  expectedName?: string;
  /** A preset's overrides: each key replaces the pack's own value. */
  overrides?: Record<string, unknown>;
  presetId?: string;
  digest?: string;
  /** The tool registry's view of names (injected: a domain does not import the tools layer). */
  tools?: ToolNames;
}

export interface ToolNames {
  /** Defined tool names: a policy rule that matches none gets a warning. */
  known: readonly string[];
  /** The canonical name of a migration alias (old config tool names → config). */
  canonical(name: string): string;
  /** Names rejected in explicit allowlists (old config tool names). */
  rejectedInAllowlist(name: string): boolean;
}

export const MAX_MANIFEST_BYTES = 256 * 1024;
export const MAX_PREAMBLE_CHARS = 32 * 1024;
export const MAX_HOOKS = 32;
export const MAX_POLICY_RULES = 256;
export const DEFAULT_HOOK_TIMEOUT_SECONDS = 30;
export const MAX_HOOK_TIMEOUT_SECONDS = 600;

const NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;
const TOOL_PATTERN = /^[A-Za-z0-9_*?.-]{1,128}$/;
const TOP_KEYS = [
  'name',
  'description',
  'prompt',
  'skills',
  'hooks',
  'policy',
  'task_rules',
  'skill_rules',
  'choreography',
] as const;
/** Keys a preset's `overrides` may set (each replaces the pack's own value). */
export const OVERRIDE_KEYS = TOP_KEYS.filter((k) => k !== 'name');

export function manifestDigest(text: string): string {
  return createHash('sha256').update(text).digest('hex').slice(0, 16);
}

/** Parse TOML text. A syntax error reports its line and column only: the excerpt could hold a secret. */
export function parseManifestText(
  text: string,
  options: Omit<ValidateOptions, 'digest'> = {},
): ParsedManifest {
  const digest = manifestDigest(text);
  if (Buffer.byteLength(text) > MAX_MANIFEST_BYTES) {
    return {
      digest,
      diagnostics: [
        diag('pack', 'pack.toml', 'error', `the manifest is over the ${MAX_MANIFEST_BYTES}-byte limit`),
      ],
    };
  }
  let tree: Record<string, unknown>;
  try {
    tree = parseToml(text) as Record<string, unknown>;
  } catch (error) {
    const where =
      error instanceof TomlError ? ` at line ${error.line}, column ${error.column}` : ' (unreadable)';
    return { digest, diagnostics: [diag('pack', 'pack.toml', 'error', `TOML syntax error${where}`)] };
  }
  return validateManifest(tree, { ...options, digest });
}

/** Validate a parsed tree (and a preset's overrides over it) into a manifest plus diagnostics. */
export function validateManifest(
  tree: Record<string, unknown>,
  options: ValidateOptions = {},
): ParsedManifest {
  const diagnostics: PackDiagnostic[] = [];
  const merged: Record<string, unknown> = { ...tree };
  if (options.overrides !== undefined) {
    const presetField = `operating_mode_presets.${options.presetId ?? '?'}.overrides`;
    for (const [key, value] of Object.entries(options.overrides)) {
      if (!(OVERRIDE_KEYS as readonly string[]).includes(key)) {
        diagnostics.push(
          diag(
            'preset',
            `${presetField}.${key}`,
            'error',
            `unknown override key; allowed: ${OVERRIDE_KEYS.join(', ')}`,
          ),
        );
        continue;
      }
      merged[key] = value;
    }
  }
  const v = new Validator(diagnostics);
  for (const key of Object.keys(merged)) {
    if (!(TOP_KEYS as readonly string[]).includes(key)) {
      v.error(key, key, `unknown key; a pack has ${TOP_KEYS.join(', ')}`);
    }
  }

  const name = v.string('pack', 'name', merged.name, { required: true, pattern: NAME });
  if (name !== undefined && options.expectedName !== undefined && name !== options.expectedName) {
    v.error('pack', 'name', 'differs from the pack directory name; rename one so they match');
  }
  const description = v.string('pack', 'description', merged.description, { max: 500 }) ?? '';

  let preamble = '';
  const prompt = v.table('prompt', 'prompt', merged.prompt);
  if (prompt) {
    v.onlyKeys('prompt', 'prompt', prompt, ['preamble']);
    preamble = v.string('prompt', 'prompt.preamble', prompt.preamble, { max: MAX_PREAMBLE_CHARS }) ?? '';
  }

  const skills = v
    .array('skills', 'skills', merged.skills, 64)
    .map((item, i) => v.string('skills', `skills[${i}]`, item, { required: true, pattern: NAME }))
    .filter((s): s is string => s !== undefined);

  const hooks = validateHooks(v, merged.hooks);
  const policy = validatePolicy(v, merged.policy, options.tools);

  const taskRules: PackTaskRule[] = [];
  v.array('task_rules', 'task_rules', merged.task_rules, 64).forEach((item, i) => {
    const at = `task_rules[${i}]`;
    const rule = v.table('task_rules', at, item, true);
    if (!rule) return;
    v.onlyKeys('task_rules', at, rule, ['name', 'instruction', 'when']);
    const ruleName = v.string('task_rules', `${at}.name`, rule.name, { required: true, pattern: NAME });
    const instruction = v.string('task_rules', `${at}.instruction`, rule.instruction, {
      required: true,
      max: 4000,
    });
    const when = v.string('task_rules', `${at}.when`, rule.when, { max: 500 });
    if (ruleName !== undefined && instruction !== undefined) {
      taskRules.push({ name: ruleName, instruction, ...(when !== undefined ? { when } : {}) });
    }
  });

  const skillRules: PackSkillRule[] = [];
  v.array('skill_rules', 'skill_rules', merged.skill_rules, 64).forEach((item, i) => {
    const at = `skill_rules[${i}]`;
    const rule = v.table('skill_rules', at, item, true);
    if (!rule) return;
    v.onlyKeys('skill_rules', at, rule, ['skill', 'when']);
    const skill = v.string('skill_rules', `${at}.skill`, rule.skill, { required: true, pattern: NAME });
    const when = v.string('skill_rules', `${at}.when`, rule.when, { required: true, max: 500 });
    if (skill !== undefined && !skills.includes(skill)) {
      v.warn('skill_rules', `${at}.skill`, 'names a skill that is not listed in skills');
    }
    if (skill !== undefined && when !== undefined) skillRules.push({ skill, when });
  });

  let choreography: ChoreographyPreset | '' = '';
  const chor = v.table('choreography', 'choreography', merged.choreography);
  if (chor) {
    v.onlyKeys('choreography', 'choreography', chor, ['preset']);
    choreography =
      v.oneOf('choreography', 'choreography.preset', chor.preset, CHOREOGRAPHY_PRESETS, true) ?? '';
  }

  const digest = options.digest ?? '';
  if (diagnostics.some((d) => d.level === 'error') || name === undefined) return { diagnostics, digest };
  return {
    digest,
    diagnostics,
    manifest: {
      name,
      description,
      preamble,
      skills,
      hooks,
      policy,
      task_rules: taskRules,
      skill_rules: skillRules,
      choreography,
    },
  };
}

/** The `[[hooks]]` entries. */
function validateHooks(v: Validator, value: unknown): PackHook[] {
  const hooks: PackHook[] = [];
  v.array('hooks', 'hooks', value, MAX_HOOKS).forEach((item, i) => {
    const at = `hooks[${i}]`;
    const hook = v.table('hooks', at, item, true);
    if (!hook) return;
    v.onlyKeys('hooks', at, hook, ['event', 'command', 'tool', 'timeout_seconds']);
    const event = v.oneOf('hooks', `${at}.event`, hook.event, HOOK_EVENTS);
    const command = v.string('hooks', `${at}.command`, hook.command, { required: true, max: 8192 });
    const tool = v.string('hooks', `${at}.tool`, hook.tool, { pattern: TOOL_PATTERN });
    if (tool !== undefined && event !== undefined && !event.startsWith('tool.')) {
      v.warn('hooks', `${at}.tool`, 'only tool.started and tool.finished hooks filter by tool; ignored');
    }
    const timeout = v.integer('hooks', `${at}.timeout_seconds`, hook.timeout_seconds, {
      min: 1,
      max: MAX_HOOK_TIMEOUT_SECONDS,
    });
    if (event !== undefined && command !== undefined) {
      hooks.push({
        event,
        command,
        ...(tool !== undefined && event.startsWith('tool.') ? { tool } : {}),
        timeout_seconds: timeout ?? DEFAULT_HOOK_TIMEOUT_SECONDS,
      });
    }
  });
  return hooks;
}

/** The `[[policy]]` rules, with tool names made canonical. */
function validatePolicy(v: Validator, value: unknown, tools: ValidateOptions['tools']): PackPolicyRule[] {
  const policy: PackPolicyRule[] = [];
  v.array('policy', 'policy', value, MAX_POLICY_RULES).forEach((item, i) => {
    const at = `policy[${i}]`;
    const rule = v.table('policy', at, item, true);
    if (!rule) return;
    v.onlyKeys('policy', at, rule, ['tool', 'effect', 'reason']);
    const tool = v.string('policy', `${at}.tool`, rule.tool, { required: true, pattern: TOOL_PATTERN });
    const effect = v.oneOf('policy', `${at}.effect`, rule.effect, ['allow', 'deny'] as const);
    v.string('policy', `${at}.reason`, rule.reason, { max: 500 });
    if (tool === undefined || effect === undefined) return;
    // spec, Native agent tools: old config tool names are rejected in explicit allowlists.
    if (effect === 'allow' && tools?.rejectedInAllowlist(tool)) {
      v.error(
        'policy',
        `${at}.tool`,
        'is an old config tool name, not accepted in an allow rule; use config',
      );
      return;
    }
    const canonical = tools?.canonical(tool) ?? tool;
    const matches = toolMatcher(canonical);
    if (tools && !tools.known.some(matches)) {
      v.warn('policy', `${at}.tool`, 'matches no defined tool; the rule has no effect');
    }
    policy.push({ tool: canonical, effect });
  });
  return policy;
}

/** Glob (`*`, `?`) → anchored RegExp over tool names. */
export function toolMatcher(pattern: string): (name: string) => boolean {
  if (!/[*?]/.test(pattern)) return (name) => name === pattern;
  const source = pattern
    .replace(/[.+^${}()|[\]\\-]/g, '\\$&')
    .replace(/\*/g, '.*')
    .replace(/\?/g, '.');
  const re = new RegExp(`^${source}$`);
  return (name) => re.test(name);
}

function diag(section: string, field: string, level: DiagnosticLevel, message: string): PackDiagnostic {
  return { section, field, level, message };
}

/** Checks that report by section and field and never echo the value they checked. */
class Validator {
  constructor(private readonly out: PackDiagnostic[]) {}

  error(section: string, field: string, message: string) {
    this.out.push(diag(section, field, 'error', message));
  }

  warn(section: string, field: string, message: string) {
    this.out.push(diag(section, field, 'warning', message));
  }

  string(
    section: string,
    field: string,
    value: unknown,
    rules: { required?: boolean; pattern?: RegExp; max?: number } = {},
  ): string | undefined {
    if (value === undefined) {
      if (rules.required) this.error(section, field, 'is required');
      return undefined;
    }
    if (typeof value !== 'string') {
      this.error(section, field, `expected a string, got ${kind(value)}`);
      return undefined;
    }
    if (rules.required && value.trim() === '') {
      this.error(section, field, 'must not be empty');
      return undefined;
    }
    if (rules.max !== undefined && value.length > rules.max) {
      this.error(section, field, `is longer than ${rules.max} characters`);
      return undefined;
    }
    if (rules.pattern && !rules.pattern.test(value)) {
      this.error(section, field, `has characters that are not allowed (expected ${describe(rules.pattern)})`);
      return undefined;
    }
    return value;
  }

  integer(
    section: string,
    field: string,
    value: unknown,
    rules: { min: number; max: number },
  ): number | undefined {
    if (value === undefined) return undefined;
    if (typeof value !== 'number' && typeof value !== 'bigint') {
      this.error(section, field, `expected an integer, got ${kind(value)}`);
      return undefined;
    }
    const n = Number(value);
    if (!Number.isInteger(n) || n < rules.min || n > rules.max) {
      this.error(section, field, `must be an integer from ${rules.min} to ${rules.max}`);
      return undefined;
    }
    return n;
  }

  oneOf<T extends string>(
    section: string,
    field: string,
    value: unknown,
    allowed: readonly T[],
    required = true,
  ): T | undefined {
    if (value === undefined) {
      if (required) this.error(section, field, `is required; one of ${allowed.join(', ')}`);
      return undefined;
    }
    if (typeof value !== 'string' || !(allowed as readonly string[]).includes(value)) {
      this.error(section, field, `must be one of ${allowed.join(', ')}`);
      return undefined;
    }
    return value as T;
  }

  table(
    section: string,
    field: string,
    value: unknown,
    required = false,
  ): Record<string, unknown> | undefined {
    if (value === undefined) {
      if (required) this.error(section, field, 'is required');
      return undefined;
    }
    if (typeof value !== 'object' || value === null || Array.isArray(value) || value instanceof Date) {
      this.error(section, field, `expected a table, got ${kind(value)}`);
      return undefined;
    }
    return value as Record<string, unknown>;
  }

  array(section: string, field: string, value: unknown, max: number): unknown[] {
    if (value === undefined) return [];
    if (!Array.isArray(value)) {
      this.error(section, field, `expected an array, got ${kind(value)}`);
      return [];
    }
    if (value.length > max) {
      this.error(section, field, `has more than ${max} entries`);
      return [];
    }
    return value;
  }

  onlyKeys(section: string, field: string, table: Record<string, unknown>, keys: string[]) {
    for (const key of Object.keys(table)) {
      if (!keys.includes(key))
        this.error(section, `${field}.${key}`, `unknown key; expected ${keys.join(', ')}`);
    }
  }
}

function kind(value: unknown): string {
  if (Array.isArray(value)) return 'an array';
  if (value === null) return 'null';
  if (value instanceof Date) return 'a date';
  if (typeof value === 'object') return 'a table';
  if (typeof value === 'bigint') return 'an integer';
  return `a ${typeof value}`;
}

function describe(pattern: RegExp): string {
  if (pattern === NAME) return 'letters, digits, dot, dash or underscore, at most 64';
  return 'a tool name or a glob of letters, digits, _ . - * ?';
}
