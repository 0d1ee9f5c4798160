/**
 * Manifest validation. Pins: strict keys (a misspelled section is an error, not ignored), every
 * diagnostic has section/field/level/message, messages never echo a manifest value (not even
 * from a TOML syntax error), preset overrides replace keys, and old config tool names are
 * rejected in allow rules.
 */
import { describe, expect, it } from 'vitest';
import { canonicalToolName, isConfigAlias } from '../tools/core/aliases';
import { parseManifestText, toolMatcher } from './manifest';

const tools = {
  known: ['view', 'edit', 'config', 'get_config', 'get_operating_mode'],
  canonical: canonicalToolName,
  rejectedInAllowlist: isConfigAlias,
};
const SECRET = 'MARKER-never-echo-5150';

describe('pack manifests', () => {
  it('parses a complete manifest with defaults', () => {
    const parsed = parseManifestText(
      `
name = "full"
description = "d"
skills = ["a", "b"]
[prompt]
preamble = "be brief"
[[hooks]]
event = "tool.finished"
tool = "edit"
command = "true"
[[hooks]]
event = "run.started"
command = "true"
timeout_seconds = 5
[[policy]]
tool = "config_set"
effect = "deny"
[[policy]]
tool = "get_*"
effect = "allow"
[[task_rules]]
name = "t"
instruction = "do it"
[[skill_rules]]
skill = "a"
when = "always"
[choreography]
preset = "fan_out"
`,
      { tools },
    );
    expect(parsed.diagnostics).toEqual([]);
    expect(parsed.digest).toMatch(/^[0-9a-f]{16}$/);
    expect(parsed.manifest).toEqual({
      name: 'full',
      description: 'd',
      preamble: 'be brief',
      skills: ['a', 'b'],
      hooks: [
        { event: 'tool.finished', tool: 'edit', command: 'true', timeout_seconds: 30 },
        { event: 'run.started', command: 'true', timeout_seconds: 5 },
      ],
      // An old config tool name in a deny rule means config.
      policy: [
        { tool: 'config', effect: 'deny' },
        { tool: 'get_*', effect: 'allow' },
      ],
      task_rules: [{ name: 't', instruction: 'do it' }],
      skill_rules: [{ skill: 'a', when: 'always' }],
      choreography: 'fan_out',
    });
  });

  it('OPMODE-09: reports unknown keys and bad values by section and field, never by value', () => {
    const parsed = parseManifestText(
      `
name = "x"
[[polcy]]
tool = "${SECRET}"
[prompt]
preamble = 42
extra = "${SECRET}"
[[hooks]]
event = "run.started"
command = ""
timeout_seconds = 9999
[[policy]]
tool = "config_get"
effect = "allow"
[[policy]]
tool = "nothing_matches_*"
effect = "deny"
[choreography]
preset = "${SECRET}"
`,
      { tools },
    );
    expect(parsed.manifest).toBeUndefined();
    expect(parsed.diagnostics).toEqual([
      { section: 'polcy', field: 'polcy', level: 'error', message: expect.stringContaining('unknown key') },
      { section: 'prompt', field: 'prompt.extra', level: 'error', message: 'unknown key; expected preamble' },
      {
        section: 'prompt',
        field: 'prompt.preamble',
        level: 'error',
        message: 'expected a string, got a number',
      },
      { section: 'hooks', field: 'hooks[0].command', level: 'error', message: 'must not be empty' },
      {
        section: 'hooks',
        field: 'hooks[0].timeout_seconds',
        level: 'error',
        message: 'must be an integer from 1 to 600',
      },
      {
        section: 'policy',
        field: 'policy[0].tool',
        level: 'error',
        message: 'is an old config tool name, not accepted in an allow rule; use config',
      },
      {
        section: 'policy',
        field: 'policy[1].tool',
        level: 'warning',
        message: 'matches no defined tool; the rule has no effect',
      },
      {
        section: 'choreography',
        field: 'choreography.preset',
        level: 'error',
        message: 'must be one of solo, plan_then_execute, executor_reviewer, fan_out',
      },
    ]);
    expect(JSON.stringify(parsed.diagnostics)).not.toContain(SECRET);
  });

  it('reports a TOML syntax error by line and column, without the offending text', () => {
    const parsed = parseManifestText(`name = "x"\n[prompt]\npreamble = "${SECRET}\n`);
    expect(parsed.diagnostics).toEqual([
      {
        section: 'pack',
        field: 'pack.toml',
        level: 'error',
        message: 'TOML syntax error at line 3, column 35',
      },
    ]);
    expect(JSON.stringify(parsed)).not.toContain(SECRET);
  });

  it('requires the name to match the pack directory and warns about unlisted skills in skill rules', () => {
    const parsed = parseManifestText('name = "other"\n[[skill_rules]]\nskill = "x"\nwhen = "w"\n', {
      expectedName: 'mine',
    });
    expect(parsed.diagnostics).toEqual([
      {
        section: 'pack',
        field: 'name',
        level: 'error',
        message: 'differs from the pack directory name; rename one so they match',
      },
      {
        section: 'skill_rules',
        field: 'skill_rules[0].skill',
        level: 'warning',
        message: 'names a skill that is not listed in skills',
      },
    ]);
    expect(parseManifestText('description = "no name"').diagnostics).toEqual([
      { section: 'pack', field: 'name', level: 'error', message: 'is required' },
    ]);
  });

  it('applies preset overrides key by key and rejects unknown override keys', () => {
    const base = 'name = "p"\nskills = ["a"]\n[choreography]\npreset = "solo"\n';
    const parsed = parseManifestText(base, {
      presetId: 'fast',
      overrides: { skills: ['b'], choreography: { preset: 'fan_out' } },
    });
    expect(parsed.manifest).toMatchObject({ name: 'p', skills: ['b'], choreography: 'fan_out' });
    const bad = parseManifestText(base, { presetId: 'fast', overrides: { name: 'renamed', skills: 'no' } });
    expect(bad.diagnostics).toEqual([
      {
        section: 'preset',
        field: 'operating_mode_presets.fast.overrides.name',
        level: 'error',
        message: expect.stringContaining('unknown override key'),
      },
      { section: 'skills', field: 'skills', level: 'error', message: 'expected an array, got a string' },
    ]);
  });

  it('matches tool globs', () => {
    expect(toolMatcher('get_*')('get_config')).toBe(true);
    expect(toolMatcher('get_*')('config')).toBe(false);
    expect(toolMatcher('vie?')('view')).toBe(true);
    expect(toolMatcher('view')('view2')).toBe(false);
    expect(toolMatcher('*')('anything')).toBe(true);
  });
});
