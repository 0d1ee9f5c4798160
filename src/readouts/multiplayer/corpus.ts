/**
 * The multiplayer reference trace corpus: four fixtures shipped inside the package (two
 * `concurrent`, two `sequential_handoff`) and the validator that yields `corpus_valid`.
 * The location can be overridden (`options.stigmergy.corpus_dir` or env
 * `SVC_MULTIPLAYER_CORPUS_DIR`) so a broken corpus can be examined: an unreadable or unparsable
 * corpus is a load error (HTTP 500); a readable one that breaks the rules is invalid (200 with
 * `corpus_valid: false` and warnings).
 * @module
 */
import { readdirSync, readFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { z } from 'zod';
import { SvcError } from '../../errors';
import { lazy } from '../../util/lazy';
import concurrentClaims from './corpus/concurrent-claims-01.json';
import concurrentMarkers from './corpus/concurrent-marker-relay-02.json';
import handoffPlan from './corpus/handoff-plan-to-build-01.json';
import handoffReview from './corpus/handoff-review-02.json';

export const TRACE_ACTIONS = [
  'run.start',
  'run.end',
  'file.edit',
  'claim.acquire',
  'claim.release',
  'claim.negotiate',
  'marker.create',
  'marker.delete',
  'handoff',
] as const;

export const traceStepSchema = lazy(() =>
  z.strictObject({
    seq: z.number().int().positive(),
    at_ms: z.number().int().min(0),
    actor: z.string().min(1),
    action: z.enum(TRACE_ACTIONS),
    paths: z.array(z.string()).default([]),
    claim: z.strictObject({ mode: z.enum(['soft', 'hard']) }).optional(),
    /** The receiving actor of a handoff. */
    to: z.string().min(1).optional(),
  }),
);

export const traceSchema = lazy(() =>
  z.strictObject({
    trace_id: z.string().min(1),
    scenario_kind: z.enum(['concurrent', 'sequential_handoff']),
    title: z.string().min(1).optional(),
    actors: z
      .array(
        z.strictObject({
          id: z.string().min(1),
          type: z.enum(['agent', 'operator', 'subagent']),
          session: z.string().min(1),
        }),
      )
      .min(1),
    steps: z.array(traceStepSchema()).min(1),
  }),
);

export type Trace = z.output<ReturnType<typeof traceSchema>>;
export type TraceStep = z.output<ReturnType<typeof traceStepSchema>>;

export interface CorpusFixture {
  file: string;
  raw: unknown;
  trace?: Trace;
  problems: string[];
}

export interface LoadedCorpus {
  source: 'embedded' | string;
  fixtures: CorpusFixture[];
  valid: boolean;
  problems: string[];
}

const EMBEDDED: Record<string, unknown> = {
  'concurrent-claims-01.json': concurrentClaims,
  'concurrent-marker-relay-02.json': concurrentMarkers,
  'handoff-plan-to-build-01.json': handoffPlan,
  'handoff-review-02.json': handoffReview,
};

/** Throws a 500 SvcError when the corpus cannot be read or parsed. */
export function loadCorpus(dir?: string): LoadedCorpus {
  const files: [string, unknown][] = dir ? readCorpusDir(dir) : Object.entries(EMBEDDED);
  const fixtures = files.map(([file, raw]) => validateFixture(file, raw));
  const problems = [
    ...fixtures.flatMap((f) => f.problems.map((p) => `${f.file}: ${p}`)),
    ...corpusProblems(fixtures),
  ];
  return { source: dir ?? 'embedded', fixtures, valid: problems.length === 0, problems };
}

function readCorpusDir(dir: string): [string, unknown][] {
  let names: string[];
  try {
    names = readdirSync(dir)
      .filter((n) => n.endsWith('.json'))
      .sort();
  } catch (error) {
    throw new SvcError(
      'internal',
      `multiplayer corpus ${dir} cannot be read: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`,
      {
        status: 500,
      },
    );
  }
  return names.map((name) => {
    const path = join(dir, name);
    let text: string;
    try {
      text = readFileSync(path, 'utf8');
    } catch (error) {
      throw new SvcError(
        'internal',
        `multiplayer corpus fixture ${name} cannot be read: ${(error as NodeJS.ErrnoException).code}`,
        { status: 500 },
      );
    }
    try {
      return [basename(name), JSON.parse(text)] as [string, unknown];
    } catch (error) {
      throw new SvcError(
        'internal',
        `multiplayer corpus fixture ${name} is not valid JSON: ${(error as Error).message}`,
        { status: 500 },
      );
    }
  });
}

export function validateFixture(file: string, raw: unknown): CorpusFixture {
  const parsed = traceSchema().safeParse(raw);
  if (!parsed.success) {
    return {
      file,
      raw,
      problems: parsed.error.issues.map((i) => `${i.path.join('.') || 'trace'}: ${i.message}`),
    };
  }
  const trace = parsed.data;
  const problems = structuralProblems(trace);
  if (trace.scenario_kind === 'concurrent') {
    const stepActors = new Set(trace.steps.map((s) => s.actor));
    if (stepActors.size < 2) problems.push('concurrent: needs at least two acting actors');
    else if (!interleaved(trace.steps)) problems.push("concurrent: the actors' steps must interleave");
  } else {
    const handoffIndex = trace.steps.findIndex((s) => s.action === 'handoff');
    if (handoffIndex === -1) problems.push('sequential_handoff: needs a handoff step');
    else {
      const receiver = trace.steps[handoffIndex].to;
      const early = trace.steps.slice(0, handoffIndex).find((s) => s.actor === receiver);
      if (early)
        problems.push(
          `sequential_handoff: receiving actor "${receiver}" acts (step ${early.seq}) before the handoff`,
        );
    }
  }
  return { file, raw, trace, problems };
}

/** Checks every trace must pass, whatever its scenario: declared actors, ordering, claim modes, handoff targets. */
export function structuralProblems(trace: Pick<Trace, 'actors' | 'steps'>): string[] {
  const problems: string[] = [];
  const actors = new Set(trace.actors.map((a) => a.id));
  if (actors.size !== trace.actors.length) problems.push('actors: duplicate actor id');
  let lastSeq = 0;
  let lastAt = -1;
  for (const step of trace.steps) {
    if (!actors.has(step.actor)) problems.push(`step ${step.seq}: actor "${step.actor}" is not declared`);
    if (step.seq <= lastSeq) problems.push(`step ${step.seq}: seq must be strictly increasing`);
    if (step.at_ms < lastAt) problems.push(`step ${step.seq}: at_ms goes back in time`);
    if (step.action.startsWith('claim.') && step.action !== 'claim.release' && !step.claim) {
      problems.push(`step ${step.seq}: ${step.action} needs a claim mode`);
    }
    if (step.action === 'handoff') {
      if (!step.to) problems.push(`step ${step.seq}: handoff needs a receiving actor (to)`);
      else if (!actors.has(step.to))
        problems.push(`step ${step.seq}: handoff to undeclared actor "${step.to}"`);
    }
    lastSeq = step.seq;
    lastAt = step.at_ms;
  }
  return problems;
}

/** Two actors interleave when some actor acts, another acts, then the first acts again. */
function interleaved(steps: TraceStep[]): boolean {
  const firstSeen = new Map<string, number>();
  steps.forEach((s, i) => {
    if (!firstSeen.has(s.actor)) firstSeen.set(s.actor, i);
  });
  return steps.some((s, i) => {
    const first = firstSeen.get(s.actor)!;
    return i > first && steps.slice(first + 1, i).some((other) => other.actor !== s.actor);
  });
}

function corpusProblems(fixtures: CorpusFixture[]): string[] {
  const problems: string[] = [];
  if (fixtures.length !== 4) problems.push(`corpus: expected 4 fixtures, found ${fixtures.length}`);
  const kinds = fixtures.map((f) => f.trace?.scenario_kind);
  const concurrent = kinds.filter((k) => k === 'concurrent').length;
  const handoff = kinds.filter((k) => k === 'sequential_handoff').length;
  if (concurrent !== 2 || handoff !== 2) {
    problems.push(
      `corpus: expected 2 concurrent and 2 sequential_handoff fixtures, found ${concurrent} and ${handoff}`,
    );
  }
  const ids = fixtures.map((f) => f.trace?.trace_id).filter(Boolean);
  if (new Set(ids).size !== ids.length) problems.push('corpus: trace_id values must be unique');
  return problems;
}
