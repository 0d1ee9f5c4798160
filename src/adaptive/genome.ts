/**
 * The orchestration genome: how one session's runs are choreographed. `schema_version` 1 (spec,
 * Versioning); `choreography_preset` and `topology` are spec-named, the rest is svc's design
 * (docs/adaptive-orchestration.md):
 *
 * | key                    | effect                                                                 |
 * |------------------------|------------------------------------------------------------------------|
 * | `max_parallel_agents`  | sub-agents (`agent` tool) that may run at once; > 1 only for fan_out   |
 * | `plan_gate`            | the session enters the staged workflow's planning phase at a boundary  |
 * | `review_gate`          | a reviewer sub-agent pass after every completed run                    |
 * | `compaction_threshold` | the session's auto-compaction threshold (context-window ratio)         |
 *
 * The fingerprint is the first 16 hex characters of the sha256 of the canonical JSON (keys
 * sorted): it names a genome in the regulatory history without serializing it twice.
 * @module
 */
import { createHash } from 'node:crypto';
import { z } from 'zod';
import { lazy } from '../util/lazy';

export const GENOME_SCHEMA_VERSION = 1;

export const PRESETS = ['solo', 'plan_then_execute', 'executor_reviewer', 'fan_out'] as const;
export type Preset = (typeof PRESETS)[number];

export const TOPOLOGIES = ['single', 'pipeline', 'hub_and_spoke'] as const;
export type Topology = (typeof TOPOLOGIES)[number];

export const genomeSchema = lazy(() =>
  z.strictObject({
    schema_version: z.literal(GENOME_SCHEMA_VERSION),
    choreography_preset: z.enum(PRESETS),
    topology: z.enum(TOPOLOGIES),
    max_parallel_agents: z.number().int().min(1).max(16),
    plan_gate: z.boolean(),
    review_gate: z.boolean(),
    compaction_threshold: z.number().min(0.1).max(1),
  }),
);

export type Genome = z.infer<ReturnType<typeof genomeSchema>>;

/** What a preset means before the monitor tunes its parameters. */
export interface PresetDefaults {
  /** Cap of max_parallel_agents (`options.adaptive_orchestration.max_parallel_agents`). */
  parallelCap: number;
  /** `options.compaction_threshold`. */
  compactionThreshold: number;
}

export function presetGenome(preset: Preset, defaults: PresetDefaults): Genome {
  const base = {
    schema_version: GENOME_SCHEMA_VERSION,
    choreography_preset: preset,
    compaction_threshold: round(defaults.compactionThreshold),
  } as const;
  switch (preset) {
    case 'solo':
      return { ...base, topology: 'single', max_parallel_agents: 1, plan_gate: false, review_gate: false };
    case 'plan_then_execute':
      return { ...base, topology: 'pipeline', max_parallel_agents: 1, plan_gate: true, review_gate: false };
    case 'executor_reviewer':
      return { ...base, topology: 'pipeline', max_parallel_agents: 1, plan_gate: false, review_gate: true };
    case 'fan_out':
      return {
        ...base,
        topology: 'hub_and_spoke',
        max_parallel_agents: Math.max(2, defaults.parallelCap),
        plan_gate: false,
        review_gate: false,
      };
  }
}

/** Canonical JSON: keys sorted at every level, so equal genomes have equal fingerprints. */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
  }
  return JSON.stringify(value);
}

export function fingerprint(genome: Genome): string {
  return createHash('sha256').update(canonicalJson(genome)).digest('hex').slice(0, 16);
}

export type DecodedGenome = { ok: true; genome: Genome } | { ok: false; reason: string };

/** A stored genome: a newer svc may have written a schema this one does not know. */
export function decodeGenome(text: string | null): DecodedGenome | undefined {
  if (text === null) return undefined;
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch {
    return { ok: false, reason: 'the stored genome is not valid JSON' };
  }
  const version = (raw as { schema_version?: unknown } | null)?.schema_version;
  if (version !== GENOME_SCHEMA_VERSION) {
    return {
      ok: false,
      reason: `the stored genome has schema_version ${JSON.stringify(version ?? null)}; this svc reads schema_version ${GENOME_SCHEMA_VERSION}`,
    };
  }
  const parsed = genomeSchema().safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    return { ok: false, reason: `the stored genome is invalid at ${issue.path.join('.') || '(root)'}` };
  }
  return { ok: true, genome: parsed.data };
}

/** Tools a genome relies on: a policy that removes one of them blocks a reshape to it. */
export function requiredTools(genome: Genome): string[] {
  const tools: string[] = [];
  if (genome.max_parallel_agents > 1 || genome.choreography_preset === 'fan_out') tools.push('agent');
  if (genome.review_gate) tools.push('agent');
  if (genome.plan_gate) tools.push('set_plan_artifact', 'approve_plan');
  return [...new Set(tools)];
}

/**
 * The prompt section of a genome: what the choreography asks of the model. Metadata of the
 * genome only; never anything from the session's messages.
 */
export function renderGuidance(genome: Genome): string {
  const lines = [
    '# Orchestration genome (adaptive orchestration)',
    `Choreography: ${genome.choreography_preset} (topology ${genome.topology}).`,
  ];
  switch (genome.choreography_preset) {
    case 'solo':
      lines.push(
        'Work through the task yourself, step by step. Start a sub-agent only for a clearly separate search.',
      );
      break;
    case 'plan_then_execute':
      lines.push(
        'Plan first: investigate with read-only tools, write a concrete numbered plan with set_plan_artifact, and stop for approval. Execute only after the plan is approved (approve_plan or /approve).',
      );
      break;
    case 'executor_reviewer':
      lines.push(
        'You are the executor. Make the change completely and verify it (run the tests or the relevant command). A reviewer sub-agent checks your work after the run; its findings reach you on the next turn.',
      );
      break;
    case 'fan_out':
      lines.push(
        `Coordinate: split independent parts of the task into self-contained sub-agent tasks with the agent tool. Up to ${genome.max_parallel_agents} sub-agents run in parallel when you call agent several times in one step. Then combine their answers and finish the task.`,
      );
      break;
  }
  if (genome.plan_gate && genome.choreography_preset !== 'plan_then_execute') {
    lines.push(
      'A plan gate is on: write the plan with set_plan_artifact and wait for approval before changing anything.',
    );
  }
  if (genome.review_gate && genome.choreography_preset !== 'executor_reviewer') {
    lines.push(
      'A review gate is on: a reviewer sub-agent checks each completed run; keep the work verifiable.',
    );
  }
  if (genome.max_parallel_agents > 1 && genome.choreography_preset !== 'fan_out') {
    lines.push(`Up to ${genome.max_parallel_agents} sub-agents may run in parallel.`);
  }
  lines.push(
    `Context: the history is compacted when it reaches ${Math.round(genome.compaction_threshold * 100)}% of the model's context window; keep tool output focused.`,
  );
  return lines.join('\n');
}

const round = (n: number) => Math.round(n * 1000) / 1000;
