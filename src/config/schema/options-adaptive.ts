/**
 * `[options.adaptive_orchestration]` and `[options.health_followons]`: the adaptive genome and monitor, and the health follow-on actions under their caps.
 * Parts of ./options.ts's `optionsSchema`.
 * @module
 */
import { z } from 'zod';
import { lazy } from '../../util/lazy';

export const adaptiveOrchestrationOptions = lazy(() =>
  z
    .strictObject({
      enabled: z
        .boolean()
        .default(false)
        .describe(
          'Adaptive orchestration: a per-session genome shapes the run (prompt guidance, plan gate, parallel sub-agents, reviewer pass, compaction threshold) and a monitor reshapes it from run signals. Registers get_adaptive_orchestration.',
        ),
      classifier: z
        .enum(['heuristic', 'config', 'off'])
        .default('heuristic')
        .describe(
          'How the first run of a session picks its genome: heuristic (from the task), config (default_preset), off (no genome; the monitor only records evaluations).',
        ),
      default_preset: z
        .enum(['solo', 'plan_then_execute', 'executor_reviewer', 'fan_out'])
        .optional()
        .describe(
          'The preset of classifier = "config" (and the heuristic fallback when the task says nothing).',
        ),
      max_parallel_agents: z
        .number()
        .int()
        .min(1)
        .max(16)
        .default(4)
        .describe('Most sub-agents a fan_out genome runs at once (the cap of max_parallel_agents).'),
      reviewer_agent: z
        .string()
        .min(1)
        .default('explore')
        .describe('Sub-agent kind of the executor_reviewer pass (a subagent-mode kind).'),
      monitor: z
        .strictObject({
          enabled: z.boolean().default(true).describe('Evaluate run signals and reshape genomes.'),
          cadence: z
            .number()
            .int()
            .positive()
            .default(1)
            .describe('Evaluate every N ended runs of a session family.'),
          window_runs: z
            .number()
            .int()
            .min(1)
            .max(50)
            .default(4)
            .describe('Ended runs (since the last reshape) whose signals an evaluation reads.'),
          regulatory_history_max_events: z
            .number()
            .int()
            .min(0)
            .default(32)
            .describe(
              'Retained regulatory history events per session; more than 0 adds regulatory_history (at most 32 per response), 0 omits it.',
            ),
          failure_rate: z
            .number()
            .min(0)
            .max(1)
            .default(0.5)
            .describe('Failed share of the window runs that proposes a reshape (with min_failures).'),
          min_failures: z.number().int().min(1).default(2).describe('Failed runs needed for run_failures.'),
          token_pressure: z
            .number()
            .min(0.1)
            .max(1)
            .default(0.8)
            .describe('Peak context-window ratio that lowers the genome compaction_threshold.'),
          pressure_compaction_threshold: z
            .number()
            .min(0.1)
            .max(1)
            .default(0.6)
            .describe('The compaction_threshold a token_pressure reshape sets.'),
          tool_errors: z
            .number()
            .int()
            .min(1)
            .default(3)
            .describe('Tool errors in the window that add a review gate.'),
        })
        .prefault({}),
      eval_shadow: z
        .strictObject({
          enabled: z
            .boolean()
            .default(true)
            .describe('Score an alternative genome on the same signals at every evaluation.'),
          min_evaluations: z
            .number()
            .int()
            .min(1)
            .default(3)
            .describe('Scored evaluations of a session before the monitor consults the shadow aggregate.'),
        })
        .prefault({}),
    })
    .prefault({}),
);

export const healthFollowonsOptions = lazy(() =>
  z
    .strictObject({
      enabled: z
        .boolean()
        .default(true)
        .describe(
          'Health follow-ons: runtime signals (token pressure) activate rules that act (compaction).',
        ),
      emit_declarative_events: z
        .boolean()
        .default(false)
        .describe(
          'Publish health follow-on events (health.token_pressure, health_followon.activation) on the session bus.',
        ),
      token_pressure_threshold: z
        .number()
        .min(0)
        .max(1)
        .default(0.8)
        .describe(
          'Context-window ratio (input + output tokens / window) at which health.token_pressure fires.',
        ),
      summarize_after_run: z
        .boolean()
        .default(false)
        .describe(
          'Rule token_pressure.summarize: when a run ends still under token pressure (its compaction request came too late), summarize the idle session.',
        ),
      activation_caps: z
        .strictObject({
          emit_activation_telemetry_sse: z
            .boolean()
            .default(false)
            .describe('Publish health_followon.activation on the SSE session stream.'),
          process_hour_cap: z
            .number()
            .int()
            .min(0)
            .default(6)
            .describe(
              'Most dispatched activations per process in any rolling hour; past it activations are skipped (reason process_hour_cap).',
            ),
          session_hour_cap: z
            .number()
            .int()
            .min(0)
            .default(3)
            .describe(
              'Most dispatched activations per session in any rolling hour (reason session_hour_cap).',
            ),
        })
        .prefault({}),
    })
    .prefault({}),
);
