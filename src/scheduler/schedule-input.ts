/**
 * A schedule as the caller gives it: the input shape, its validation (exactly one of prompt or
 * recipe, exactly one of cron or at, a future time) and how an update's patch merges over a job.
 * @module
 */
import { SvcError } from '../errors';
import { printable, UNPRINTABLE } from '../util/terminal-text';
import { defaultTimezone, nextFireTimes } from './cron';
import type { Schedule } from './schedule-store';
import type { SchedulerDeps } from './scheduler-deps';

export interface ScheduleInput {
  name: string;
  prompt?: string;
  recipe?: string;
  recipe_params?: Record<string, unknown>;
  cron?: string;
  timezone?: string;
  /** One-shot time: ms since the epoch. */
  at?: number;
  session?: 'new' | 'reuse';
  session_id?: string;
  agent?: string;
  model?: string;
  paused?: boolean;
  created_by?: string;
}

/** Check an input at `now`: its next fire time, its timezone and warnings (recipes unavailable). */
export async function validateSchedule(
  deps: Pick<SchedulerDeps, 'sessions' | 'recipeToolAvailable'>,
  input: ScheduleInput,
  now: number,
): Promise<{ next: number; timezone: string; warnings: string[] }> {
  const warnings: string[] = [];
  checkScheduleName(input.name);
  const hasPrompt = typeof input.prompt === 'string' && input.prompt.trim() !== '';
  const hasRecipe = typeof input.recipe === 'string' && input.recipe.trim() !== '';
  if (hasPrompt === hasRecipe) {
    throw new SvcError(
      'invalid_input',
      'prompt or recipe: give exactly one (a prompt to send, or a recipe name to run)',
    );
  }
  if ((input.cron === undefined) === (input.at === undefined)) {
    throw new SvcError(
      'invalid_input',
      'cron or at: give exactly one (a cron expression, or a one-shot time)',
    );
  }
  const timezone = input.timezone ?? defaultTimezone();
  let next: number;
  if (input.cron !== undefined) {
    [next] = await nextFireTimes(input.cron, { after: now, timezone });
  } else {
    if (!Number.isFinite(input.at) || (input.at as number) <= now) {
      throw new SvcError(
        'invalid_input',
        `at: ${new Date(input.at as number).toISOString()} is not in the future (now is ${new Date(now).toISOString()})`,
      );
    }
    next = input.at as number;
  }
  if (hasRecipe && !deps.recipeToolAvailable()) {
    warnings.push(
      'run_recipe is not available in this build: the job fails when it fires until recipes are installed',
    );
  }
  if (input.session_id) await deps.sessions.require(input.session_id);
  return { next, timezone, warnings };
}

/**
 * A schedule's name is an identifier shown in lists and errors: not empty, and no control
 * characters (newlines, ESC sequences) or bidi overrides, which would forge or hide what is shown.
 */
export function checkScheduleName(name: string): void {
  if (!name.trim()) throw new SvcError('invalid_input', 'name: must not be empty');
  const found = UNPRINTABLE.exec(name);
  if (found) {
    throw new SvcError(
      'invalid_input',
      `name: holds the control character ${printable(found[0])} at position ${found.index + 1}; a schedule name is one line of printable text (e.g. "nightly-tests")`,
    );
  }
}

/** A job's fields with an update's patch over them (a new prompt drops the recipe, cron drops at…). */
export function mergeSchedulePatch(current: Schedule, patch: Partial<ScheduleInput>): ScheduleInput {
  return {
    name: patch.name ?? current.name,
    prompt: patch.recipe !== undefined ? undefined : (patch.prompt ?? current.prompt ?? undefined),
    recipe: patch.prompt !== undefined ? undefined : (patch.recipe ?? current.recipe ?? undefined),
    recipe_params: patch.recipe_params ?? current.recipe_params,
    cron: patch.at !== undefined ? undefined : (patch.cron ?? current.cron ?? undefined),
    at: patch.cron !== undefined ? undefined : (patch.at ?? current.run_at ?? undefined),
    timezone: patch.timezone ?? current.timezone ?? undefined,
    session: patch.session ?? current.session_mode,
    session_id: patch.session_id ?? current.session_id ?? undefined,
    agent: patch.agent ?? current.agent ?? undefined,
    model: patch.model ?? current.model ?? undefined,
  };
}
