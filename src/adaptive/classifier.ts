/**
 * The classifier: the initial genome of a session, at its first run. Inputs, strongest first:
 *
 * | source      | input                                                                     |
 * |-------------|---------------------------------------------------------------------------|
 * | `override`  | session metadata `adaptive_preset` (set when the session is created)      |
 * | `pack`      | the choreography preset of the session's operating pack                   |
 * | `config`    | `classifier = "config"`: `options.adaptive_orchestration.default_preset`   |
 * | `heuristic` | the task: its length, the files it names, and words that ask for a style   |
 *
 * The heuristic scores every preset; the winner is the genome and the runner-up is the shadow
 * genome the monitor scores alongside it (eval shadow). The task text is read, never stored.
 * @module
 */
import { type Genome, PRESETS, type Preset, type PresetDefaults, presetGenome } from './genome';

export type ClassificationSource = 'override' | 'pack' | 'config' | 'heuristic';

export interface ClassifierInput {
  mode: 'heuristic' | 'config' | 'off';
  prompt: string;
  defaultPreset?: Preset;
  packPreset?: string;
  override?: unknown;
  defaults: PresetDefaults;
}

export interface Classification {
  genome: Genome;
  source: ClassificationSource;
  /** The best other preset by the heuristic scores: the eval-shadow alternative. */
  shadow_preset: Preset;
  /** Heuristic scores (numbers only), kept in the run ledger for the decision trace. */
  scores: Record<Preset, number>;
}

const isPreset = (value: unknown): value is Preset =>
  typeof value === 'string' && (PRESETS as readonly string[]).includes(value);

/** undefined when the classifier is off and nothing overrides it: the session has no genome. */
export function classify(input: ClassifierInput): Classification | undefined {
  const scores = scoreTask(input.prompt);
  let preset: Preset | undefined;
  let source: ClassificationSource | undefined;
  if (isPreset(input.override)) [preset, source] = [input.override, 'override'];
  else if (input.mode === 'off') return undefined;
  else if (isPreset(input.packPreset)) [preset, source] = [input.packPreset, 'pack'];
  else if (input.mode === 'config' && input.defaultPreset) [preset, source] = [input.defaultPreset, 'config'];
  else {
    preset = best(scores) ?? input.defaultPreset ?? 'solo';
    source = 'heuristic';
  }
  const shadow = best(scores, preset) ?? (preset === 'solo' ? 'plan_then_execute' : 'solo');
  return { genome: presetGenome(preset, input.defaults), source, shadow_preset: shadow, scores };
}

const FAN_OUT_WORDS =
  /\b(in parallel|each (of the|file|module|package|service)|every (file|module|package|service|directory)|across (the )?(codebase|repo|repository|modules|packages|services)|all (the )?(files|modules|packages|services)|survey|audit|inventory|fan[- ]out)\b/gi;
const PLAN_WORDS =
  /\b(refactor(ing)?|redesign|migrat(e|ion)|restructure|architecture|rewrite|plan|design|step[- ]by[- ]step|carefully|breaking change)\b/gi;
const REVIEW_WORDS =
  /\b(tests?|fix(es|ing)?|bugs?|regressions?|review|verify|security|vulnerab\w*|correct(ness)?|edge cases?)\b/gi;
const INVESTIGATE_WORDS = /\b(investigate|explore|find (all|every)|where (is|are)|search)\b/gi;
const PATH_LIKE =
  /(?:^|[\s`'"(])((?:[\w.-]+\/)+[\w.-]+\.\w{1,8}|[\w-]+\.(?:ts|tsx|js|mjs|py|go|rs|java|rb|c|h|cpp|md|json|toml|yaml|yml))\b/g;

/** Heuristic scores per preset; solo wins ties and short plain tasks. */
export function scoreTask(prompt: string): Record<Preset, number> {
  const text = prompt.slice(0, 20_000);
  const count = (re: RegExp) => (text.match(re) ?? []).length;
  const files = new Set([...text.matchAll(PATH_LIKE)].map((m) => m[1])).size;
  const fan = count(FAN_OUT_WORDS) * 2 + count(INVESTIGATE_WORDS) + (files >= 4 ? 2 : 0);
  const plan = count(PLAN_WORDS) * 2 + (text.length > 1500 ? 2 : 0) + (files >= 3 ? 1 : 0);
  const review = count(REVIEW_WORDS) * 1.5;
  const solo = text.length < 200 ? 1.5 : 1;
  return {
    solo,
    plan_then_execute: plan,
    executor_reviewer: review,
    fan_out: fan,
  };
}

function best(scores: Record<Preset, number>, except?: Preset): Preset | undefined {
  let winner: Preset | undefined;
  for (const preset of PRESETS) {
    if (preset === except) continue;
    if (winner === undefined || scores[preset] > scores[winner]) winner = preset;
  }
  return winner;
}
