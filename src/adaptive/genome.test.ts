/**
 * The genome, the classifier and the regulator (pure parts of adaptive orchestration). Pins:
 * - every preset's genome has schema_version 1 and the spec's keys (VER-02, ADAPT-07);
 * - the fingerprint is 16 hex characters of the canonical JSON, independent of key order;
 * - a stored genome of another schema version is reported, not applied;
 * - classification sources override > pack > config > heuristic, and off means no genome;
 * - the heuristic picks fan_out, plan_then_execute, executor_reviewer or solo from the task and
 *   names the runner-up as the shadow preset;
 * - each regulator rule proposes its reshape, and a rule that changes nothing proposes none.
 */
import { describe, expect, it } from 'vitest';
import { classify, scoreTask } from './classifier';
import {
  canonicalJson,
  decodeGenome,
  fingerprint,
  genomeSchema,
  PRESETS,
  presetGenome,
  renderGuidance,
  requiredTools,
} from './genome';
import { type RegulatorSettings, regulate } from './regulator';
import { EMPTY_SIGNALS } from './signals';

const defaults = { parallelCap: 4, compactionThreshold: 0.85 };
const settings: RegulatorSettings = {
  failureRate: 0.5,
  minFailures: 2,
  tokenPressure: 0.8,
  pressureCompactionThreshold: 0.6,
  toolErrors: 3,
  parallelCap: 4,
};

describe('genome', () => {
  it('VER-02, ADAPT-07, ADAPT-08: every preset genome has schema_version 1, a choreography preset, a topology and the svc parameters', () => {
    for (const preset of PRESETS) {
      const genome = presetGenome(preset, defaults);
      expect(genome.schema_version).toBe(1);
      expect(genome.choreography_preset).toBe(preset);
      expect(typeof genome.topology).toBe('string');
      expect(genomeSchema().parse(genome)).toEqual(genome);
    }
    expect(presetGenome('fan_out', defaults)).toEqual({
      schema_version: 1,
      choreography_preset: 'fan_out',
      topology: 'hub_and_spoke',
      max_parallel_agents: 4,
      plan_gate: false,
      review_gate: false,
      compaction_threshold: 0.85,
    });
    expect(presetGenome('plan_then_execute', defaults)).toMatchObject({
      topology: 'pipeline',
      plan_gate: true,
    });
    expect(presetGenome('executor_reviewer', defaults)).toMatchObject({
      topology: 'pipeline',
      review_gate: true,
    });
    expect(presetGenome('solo', defaults)).toMatchObject({ topology: 'single', max_parallel_agents: 1 });
  });

  it('fingerprints the canonical JSON: 16 hex characters, whatever the key order', () => {
    const genome = presetGenome('solo', defaults);
    const shuffled = Object.fromEntries(Object.entries(genome).reverse()) as typeof genome;
    expect(canonicalJson(shuffled)).toBe(canonicalJson(genome));
    expect(fingerprint(shuffled)).toBe(fingerprint(genome));
    expect(fingerprint(genome)).toMatch(/^[0-9a-f]{16}$/);
    expect(fingerprint(presetGenome('fan_out', defaults))).not.toBe(fingerprint(genome));
  });

  it('reports a stored genome of another schema version instead of applying it', () => {
    expect(decodeGenome(null)).toBeUndefined();
    expect(decodeGenome(JSON.stringify(presetGenome('solo', defaults)))).toMatchObject({ ok: true });
    expect(decodeGenome(JSON.stringify({ schema_version: 2, choreography_preset: 'solo' }))).toEqual({
      ok: false,
      reason: 'the stored genome has schema_version 2; this svc reads schema_version 1',
    });
    expect(decodeGenome('{nope')).toMatchObject({ ok: false });
  });

  it('names the tools a genome needs and renders its guidance', () => {
    expect(requiredTools(presetGenome('solo', defaults))).toEqual([]);
    expect(requiredTools(presetGenome('fan_out', defaults))).toEqual(['agent']);
    expect(requiredTools(presetGenome('executor_reviewer', defaults))).toEqual(['agent']);
    expect(requiredTools(presetGenome('plan_then_execute', defaults))).toEqual([
      'set_plan_artifact',
      'approve_plan',
    ]);
    const text = renderGuidance(presetGenome('fan_out', defaults));
    expect(text).toContain('Choreography: fan_out (topology hub_and_spoke).');
    expect(text).toContain('Up to 4 sub-agents run in parallel');
    expect(text).toContain('85%');
  });
});

describe('classifier', () => {
  const input = { mode: 'heuristic' as const, defaults };

  it('prefers override, then the pack, then config, then the heuristic', () => {
    const prompt = 'Audit every module across the codebase in parallel';
    expect(classify({ ...input, prompt, override: 'solo', packPreset: 'fan_out' })?.source).toBe('override');
    expect(classify({ ...input, prompt, packPreset: 'executor_reviewer' })).toMatchObject({
      source: 'pack',
      genome: { choreography_preset: 'executor_reviewer' },
    });
    expect(
      classify({ ...input, mode: 'config', prompt, defaultPreset: 'plan_then_execute' })?.genome
        .choreography_preset,
    ).toBe('plan_then_execute');
    expect(classify({ ...input, prompt })).toMatchObject({
      source: 'heuristic',
      genome: { choreography_preset: 'fan_out' },
    });
    expect(classify({ ...input, mode: 'off', prompt })).toBeUndefined();
    expect(classify({ ...input, mode: 'off', prompt, override: 'fan_out' })?.source).toBe('override');
    expect(classify({ ...input, prompt, override: 'not-a-preset' })?.source).toBe('heuristic');
  });

  it('maps task features to presets and names the runner-up as the shadow', () => {
    const pick = (prompt: string) => classify({ ...input, prompt });
    expect(pick('Say hello')).toMatchObject({ genome: { choreography_preset: 'solo' } });
    expect(
      pick('Refactor the storage layer and migrate the schema carefully')?.genome.choreography_preset,
    ).toBe('plan_then_execute');
    expect(pick('Fix the failing test and verify the bug is gone')?.genome.choreography_preset).toBe(
      'executor_reviewer',
    );
    expect(
      pick('Update src/a.ts, src/b.ts, src/c.ts and src/d.ts to the new logger')?.genome.choreography_preset,
    ).toBe('fan_out');
    const result = pick('Fix the failing test and verify the bug is gone');
    expect(result?.shadow_preset).not.toBe(result?.genome.choreography_preset);
    expect(scoreTask('Say hello')).toEqual({
      solo: 1.5,
      plan_then_execute: 0,
      executor_reviewer: 0,
      fan_out: 0,
    });
  });
});

describe('regulator', () => {
  const solo = presetGenome('solo', defaults);

  it('proposes the reshape of the first matching rule', () => {
    expect(
      regulate(solo, { ...EMPTY_SIGNALS, runs: 1, attributable: 1, loop_stops: 1 }, settings),
    ).toMatchObject({
      rule: 'loop_detected',
      genome: { choreography_preset: 'plan_then_execute', plan_gate: true },
    });
    expect(
      regulate(solo, { ...EMPTY_SIGNALS, runs: 2, attributable: 2, failed: 2, failure_rate: 1 }, settings),
    ).toMatchObject({ rule: 'run_failures', genome: { choreography_preset: 'executor_reviewer' } });
    const reviewer = presetGenome('executor_reviewer', defaults);
    expect(
      regulate(
        reviewer,
        { ...EMPTY_SIGNALS, runs: 2, attributable: 2, failed: 2, failure_rate: 1 },
        settings,
      ),
    ).toMatchObject({
      rule: 'run_failures',
      genome: { choreography_preset: 'executor_reviewer', plan_gate: true },
    });
    const fan = presetGenome('fan_out', defaults);
    expect(
      regulate(fan, { ...EMPTY_SIGNALS, runs: 1, attributable: 1, provider_recoveries: 1 }, settings),
    ).toMatchObject({
      rule: 'provider_pressure',
      genome: { choreography_preset: 'fan_out', max_parallel_agents: 2 },
    });
    expect(
      regulate({ ...fan, max_parallel_agents: 2 }, { ...EMPTY_SIGNALS, provider_recoveries: 1 }, settings)
        ?.genome.choreography_preset,
    ).toBe('solo');
    expect(regulate(solo, { ...EMPTY_SIGNALS, runs: 1, peak_context_ratio: 0.9 }, settings)).toMatchObject({
      rule: 'token_pressure',
      genome: { compaction_threshold: 0.6 },
    });
    expect(regulate(solo, { ...EMPTY_SIGNALS, runs: 1, tool_errors: 3 }, settings)?.rule).toBe('tool_errors');
    expect(regulate(solo, { ...EMPTY_SIGNALS, runs: 3, retries: 2 }, settings)?.rule).toBe('retries');
  });

  it('proposes nothing below the thresholds or when the genome already answers the signal', () => {
    expect(
      regulate(solo, { ...EMPTY_SIGNALS, runs: 2, attributable: 2, failed: 1, failure_rate: 0.5 }, settings),
    ).toBe(undefined);
    const planned = presetGenome('plan_then_execute', defaults);
    expect(regulate(planned, { ...EMPTY_SIGNALS, runs: 1, loop_stops: 1 }, settings)).toBeUndefined();
    expect(
      regulate(
        { ...solo, compaction_threshold: 0.6 },
        { ...EMPTY_SIGNALS, peak_context_ratio: 0.95 },
        settings,
      ),
    ).toBeUndefined();
  });
});
