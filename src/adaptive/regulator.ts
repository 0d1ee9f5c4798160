/**
 * The regulator: given a genome and the signals of an evaluation window, the reshape it proposes
 * (or none). Pure, so the monitor runs it twice per evaluation: on the effective genome and on
 * the shadow genome (eval shadow). Rules, first match wins; a rule whose result equals the
 * current genome does not match:
 *
 * | rule                | when                                                       | reshape                                     |
 * |---------------------|------------------------------------------------------------|---------------------------------------------|
 * | `loop_detected`     | a loop stop                                                | plan_then_execute (plan gate)               |
 * | `retries`           | 2+ re-sent prompts of failed runs                          | plan_then_execute                           |
 * | `run_failures`      | ≥ min_failures failed and failure rate ≥ failure_rate      | executor_reviewer; with a review gate already: add the plan gate |
 * | `review_rejections` | 2+ reviewer passes requested changes                       | add the plan gate                           |
 * | `provider_pressure` | rate-limit recovery crossed providers, parallelism > 1     | halve max_parallel_agents (fan_out at 2 → solo) |
 * | `token_pressure`    | peak context ratio ≥ token_pressure                        | compaction_threshold = pressure_compaction_threshold |
 * | `tool_errors`       | ≥ tool_errors failed tool calls                            | add the review gate (solo → executor_reviewer) |
 * @module
 */
import { fingerprint, type Genome, type Preset, presetGenome } from './genome';
import type { WindowSignals } from './signals';

export interface RegulatorSettings {
  failureRate: number;
  minFailures: number;
  tokenPressure: number;
  pressureCompactionThreshold: number;
  toolErrors: number;
  parallelCap: number;
}

export type RuleName =
  | 'loop_detected'
  | 'retries'
  | 'run_failures'
  | 'review_rejections'
  | 'provider_pressure'
  | 'token_pressure'
  | 'tool_errors';

export interface RegulatorProposal {
  rule: RuleName;
  genome: Genome;
  /** Bounded, metadata-only explanation. */
  reason: string;
}

const pct = (n: number) => `${Math.round(n * 100)}%`;

export function regulate(
  genome: Genome,
  s: WindowSignals,
  settings: RegulatorSettings,
): RegulatorProposal | undefined {
  const withPreset = (preset: Preset, extra: Partial<Genome> = {}): Genome => ({
    ...presetGenome(preset, {
      parallelCap: settings.parallelCap,
      compactionThreshold: genome.compaction_threshold,
    }),
    ...extra,
  });
  const rules: { rule: RuleName; when: boolean; next: () => Genome; reason: () => string }[] = [
    {
      rule: 'loop_detected',
      when: s.loop_stops >= 1 && !genome.plan_gate,
      next: () => withPreset('plan_then_execute'),
      reason: () =>
        `loop_detected: ${s.loop_stops} loop stop(s) in ${s.runs} run(s); plan first (plan_then_execute)`,
    },
    {
      rule: 'retries',
      when: s.retries >= 2 && !genome.plan_gate,
      next: () => withPreset('plan_then_execute'),
      reason: () => `retries: ${s.retries} failed prompt(s) re-sent in ${s.runs} run(s); plan first`,
    },
    {
      rule: 'run_failures',
      when: s.failed >= settings.minFailures && s.failure_rate >= settings.failureRate,
      next: () => (genome.review_gate ? { ...genome, plan_gate: true } : withPreset('executor_reviewer')),
      reason: () =>
        `run_failures: ${s.failed} of ${s.attributable} run(s) failed (threshold ${pct(settings.failureRate)}, at least ${settings.minFailures}); ${genome.review_gate ? 'add the plan gate' : 'add a reviewer pass (executor_reviewer)'}`,
    },
    {
      rule: 'review_rejections',
      when: s.review_rejections >= 2 && !genome.plan_gate,
      next: () => ({ ...genome, plan_gate: true }),
      reason: () =>
        `review_rejections: the reviewer requested changes ${s.review_rejections} time(s); add the plan gate`,
    },
    {
      rule: 'provider_pressure',
      when: s.provider_recoveries >= 1 && genome.max_parallel_agents > 1,
      next: () =>
        genome.max_parallel_agents > 2
          ? { ...genome, max_parallel_agents: Math.max(2, Math.floor(genome.max_parallel_agents / 2)) }
          : withPreset('solo'),
      reason: () =>
        `provider_pressure: ${s.provider_recoveries} rate-limit recovery(ies) across providers; ${genome.max_parallel_agents > 2 ? `run at most ${Math.max(2, Math.floor(genome.max_parallel_agents / 2))} sub-agents at once` : 'stop fanning out (solo)'}`,
    },
    {
      rule: 'token_pressure',
      when:
        s.peak_context_ratio >= settings.tokenPressure &&
        genome.compaction_threshold > settings.pressureCompactionThreshold,
      next: () => ({ ...genome, compaction_threshold: settings.pressureCompactionThreshold }),
      reason: () =>
        `token_pressure: the context reached ${pct(s.peak_context_ratio)} of the window (threshold ${pct(settings.tokenPressure)}); compact at ${pct(settings.pressureCompactionThreshold)}`,
    },
    {
      rule: 'tool_errors',
      when: s.tool_errors >= settings.toolErrors && !genome.review_gate,
      next: () =>
        genome.choreography_preset === 'solo'
          ? withPreset('executor_reviewer')
          : { ...genome, review_gate: true },
      reason: () =>
        `tool_errors: ${s.tool_errors} failed tool call(s) in ${s.runs} run(s); add a reviewer pass`,
    },
  ];
  const current = fingerprint(genome);
  for (const rule of rules) {
    if (!rule.when) continue;
    const next = rule.next();
    if (fingerprint(next) === current) continue;
    return { rule: rule.rule, genome: next, reason: rule.reason() };
  }
  return undefined;
}

/** The reason of an evaluation that proposes nothing: what it read. */
export function holdReason(s: WindowSignals): string {
  return `no signal crossed its threshold (${s.runs} run(s): ${s.failed} failed, ${s.loop_stops} loop stop(s), ${s.tool_errors} tool error(s), ${s.provider_recoveries} provider recovery(ies), peak context ${pct(s.peak_context_ratio)})`;
}
