/**
 * Running a recipe: parameters resolved and checked, then each step in order as a sub-agent run
 * of the recipe's pipeline run (child session, parent run, same family). A step passes when its
 * run completes and every `expect` check holds (a shell command exits 0, or the answer contains
 * a text); otherwise it is tried again (`retries`, default `retry.attempts`) in a fresh child
 * session told what failed. A step that still fails stops the recipe unless
 * `continue_on_failure`. Expect commands run through the shell (bash analysis, deny lists, the
 * permission ask), with parameters passed in the environment (./check-command.ts), never model output.
 * @module
 */
import type { RunResult } from '../agent/types';
import { SvcError, toSvcError } from '../errors';
import type { Redactor } from '../redact';
import type { Pipeline } from '../workflows/pipeline';
import { renderTemplate } from '../workflows/template';
import type { OpContext } from '../workspace/context';
import type { BashResult } from '../workspace/shell';
import type { Workspace } from '../workspace/workspace';
import { renderCheckCommand } from './check-command';
import type { RecipeDefinition, RecipeStep } from './recipe-schema';

export type ParamValue = string | number | boolean;

export interface ExpectOutcome {
  kind: 'command' | 'contains';
  check: string;
  passed: boolean;
  exit_code?: number | null;
  timed_out?: boolean;
  /** The end of the command's output (redacted). */
  output?: string;
}

export interface RecipeStepResult {
  id: string;
  agent: string;
  status: 'completed' | 'failed' | 'cancelled' | 'skipped';
  attempts: number;
  /** The run of the last attempt. */
  run_id: string | null;
  session_id: string | null;
  /** Every attempt's run, in order. */
  run_ids: string[];
  output: string;
  error: string | null;
  expect: ExpectOutcome[];
}

const OUTPUT_TAIL = 3000;

/** Check given parameters against the recipe: unknown names, missing required ones, types, choices. */
export function resolveParams(
  name: string,
  recipe: Pick<RecipeDefinition, 'parameters'>,
  given: Record<string, unknown>,
): Record<string, ParamValue> {
  const known = recipe.parameters.map((p) => p.name);
  for (const key of Object.keys(given)) {
    if (!known.includes(key)) {
      throw new SvcError(
        'invalid_input',
        `params.${key}: "${name}" has no parameter "${key}"; its parameters: ${known.join(', ') || '(none)'}`,
      );
    }
  }
  const out: Record<string, ParamValue> = {};
  for (const param of recipe.parameters) {
    const field = `params.${param.name}`;
    let value = given[param.name] ?? param.default;
    if (value === undefined || value === null) {
      if (param.required) {
        throw new SvcError(
          'invalid_input',
          `${field}: required by "${name}"${param.description ? ` (${param.description})` : ''}`,
        );
      }
      out[param.name] = param.type === 'number' ? 0 : param.type === 'boolean' ? false : '';
      continue;
    }
    if (param.type === 'number') {
      const n =
        typeof value === 'number'
          ? value
          : typeof value === 'string' && value.trim()
            ? Number(value)
            : Number.NaN;
      if (!Number.isFinite(n))
        throw new SvcError('invalid_input', `${field}: expected a number, got ${JSON.stringify(value)}`);
      value = n;
    } else if (param.type === 'boolean') {
      if (value === 'true' || value === 'false') value = value === 'true';
      if (typeof value !== 'boolean') {
        throw new SvcError('invalid_input', `${field}: expected true or false, got ${JSON.stringify(value)}`);
      }
    } else if (typeof value === 'number' || typeof value === 'boolean') {
      value = String(value);
    } else if (typeof value !== 'string') {
      throw new SvcError('invalid_input', `${field}: expected a string, got ${JSON.stringify(value)}`);
    }
    if (param.choices && !param.choices.includes(value as string | number)) {
      throw new SvcError(
        'invalid_input',
        `${field}: ${JSON.stringify(value)} is not one of ${param.choices.map((c) => JSON.stringify(c)).join(', ')}`,
      );
    }
    out[param.name] = value as ParamValue;
  }
  return out;
}

export interface RecipeExecution {
  /** Expect commands run through the workspace shell; errors are redacted. */
  deps: { ws: Pick<Workspace, 'shell'>; redactor: Pick<Redactor, 'string'> };
  name: string;
  recipe: RecipeDefinition;
  params: Record<string, ParamValue>;
  pipeline: Pipeline;
  /** How expect commands ask for permission (the tool's ctx.ask; absent = the operator's own call). */
  approve?: OpContext['approve'];
}

/** Run every step; never throws for a failing step (the result says), only for a stop. */
export async function executeRecipe(x: RecipeExecution): Promise<RecipeStepResult[]> {
  const { recipe, params, pipeline } = x;
  const results: RecipeStepResult[] = [];
  const lookup = (reference: string): string | undefined => {
    if (reference in params) return String(params[reference]);
    const match = /^steps\.([\w-]+)\.(output|status)$/.exec(reference);
    if (!match) return undefined;
    const step = results.find((r) => r.id === match[1]);
    if (!step) return undefined;
    return match[2] === 'output' ? step.output : step.status;
  };
  let stopped: string | undefined;
  for (const [index, step] of recipe.steps.entries()) {
    if (stopped || pipeline.signal.aborted) {
      results.push(
        emptyStep(step, pipeline.signal.aborted ? 'cancelled' : 'skipped', stopped ?? 'cancelled'),
      );
      continue;
    }
    const result = await runStep(x, step, index, lookup);
    results.push(result);
    if (result.status !== 'completed' && !step.continue_on_failure) {
      stopped = `step "${step.id}" ${result.status}`;
    }
  }
  return results;
}

async function runStep(
  x: RecipeExecution,
  step: RecipeStep,
  index: number,
  lookup: (reference: string) => string | undefined,
): Promise<RecipeStepResult> {
  const { deps, pipeline, recipe } = x;
  const field = `steps[${index}]`;
  const prompt = renderTemplate(step.prompt, lookup, `${field}.prompt`);
  const attempts = 1 + (step.retries ?? recipe.retry.attempts);
  const result: RecipeStepResult = { ...emptyStep(step, 'failed', null), attempts: 0 };
  let previous: { run?: RunResult; failures: string[] } | undefined;
  for (let attempt = 1; attempt <= attempts; attempt++) {
    result.attempts = attempt;
    pipeline.event('recipe.step.started', { step: step.id, attempt, of: attempts });
    let run: RunResult;
    try {
      run = await pipeline.child({
        prompt: attempt === 1 || !previous ? prompt : retryPrompt(prompt, attempt, attempts, previous),
        agent: step.agent,
        tools: step.tools,
        maxSteps: step.max_turns ?? recipe.max_turns,
        model: step.model,
        title: `${x.name}: ${step.id}${attempt > 1 ? ` (attempt ${attempt})` : ''}`,
        metadata: { recipe: x.name, recipe_step: step.id, attempt },
        field,
      });
    } catch (error) {
      const e = toSvcError(error);
      result.status = pipeline.signal.aborted ? 'cancelled' : 'failed';
      result.error = deps.redactor.string(e.message);
      return result;
    }
    result.run_id = run.run_id;
    result.session_id = run.session_id;
    result.run_ids.push(run.run_id);
    result.output = run.text;
    const failures: string[] = [];
    result.expect = [];
    if (run.status !== 'completed') {
      failures.push(
        `the run ended ${run.status}${run.reason ? ` (${run.reason})` : ''}${run.error ? `: ${run.error}` : ''}`,
      );
    } else {
      for (const [j, expect] of step.expect.entries()) {
        const outcome = await checkExpect(x, expect, `${field}.expect[${j}]`, run.text);
        result.expect.push(outcome);
        if (!outcome.passed) {
          failures.push(
            outcome.kind === 'command'
              ? `\`${outcome.check}\` ${outcome.timed_out ? 'timed out' : `exited ${outcome.exit_code}`}:\n${outcome.output ?? ''}`
              : `the answer does not contain "${outcome.check}"`,
          );
        }
        if (pipeline.signal.aborted) break;
      }
    }
    pipeline.event('recipe.step.finished', {
      step: step.id,
      attempt,
      run_id: run.run_id,
      run_status: run.status,
      passed: failures.length === 0,
      expect: result.expect.map((e) => ({
        kind: e.kind,
        check: e.check,
        passed: e.passed,
        exit_code: e.exit_code,
      })),
    });
    if (failures.length === 0) {
      result.status = 'completed';
      result.error = null;
      return result;
    }
    result.error = deps.redactor.string(failures.map((f) => f.split('\n')[0]).join('; '));
    if (pipeline.signal.aborted || run.status === 'cancelled' || run.status === 'interrupted') {
      result.status = 'cancelled';
      return result;
    }
    previous = { run, failures };
  }
  result.status = 'failed';
  return result;
}

async function checkExpect(
  x: RecipeExecution,
  expect: RecipeStep['expect'][number],
  field: string,
  answer: string,
): Promise<ExpectOutcome> {
  const { deps, params, pipeline } = x;
  const paramOnly = (reference: string) => (reference in params ? String(params[reference]) : undefined);
  if (expect.contains !== undefined) {
    const text = renderTemplate(expect.contains, paramOnly, `${field}.contains`);
    return { kind: 'contains', check: text, passed: answer.includes(text) };
  }
  // Values travel in the environment (SVC_PARAM_<name>), never as shell text (./check-command.ts).
  const { command, vars, equivalent } = renderCheckCommand(
    x.name,
    x.recipe,
    expect.command!,
    params,
    `${field}.command`,
  );
  try {
    const outcome = (await deps.ws.shell.run(
      {
        command,
        vars,
        equivalent,
        timeout_seconds: expect.timeout_seconds,
        description: expect.description ?? `recipe ${x.name} check`,
      },
      {
        tool: 'bash',
        sessionId: pipeline.sessionId,
        runId: pipeline.runId,
        signal: pipeline.signal,
        approve: x.approve,
        event: (type, payload) => pipeline.event(type, payload),
      },
    )) as BashResult;
    return {
      kind: 'command',
      check: equivalent,
      passed: outcome.exit_code === 0 && !outcome.timed_out,
      exit_code: outcome.exit_code,
      timed_out: outcome.timed_out,
      output: tail(outcome.output),
    };
  } catch (error) {
    const e = toSvcError(error);
    if (pipeline.signal.aborted) throw error;
    // Denied, blocked by bash_deny, or could not start: the check fails with the reason.
    return {
      kind: 'command',
      check: equivalent,
      passed: false,
      exit_code: null,
      output: deps.redactor.string(`${e.code}: ${e.message}`),
    };
  }
}

function retryPrompt(
  prompt: string,
  attempt: number,
  attempts: number,
  previous: { run?: RunResult; failures: string[] },
): string {
  const answer = previous.run?.text
    ? `\n\nThe previous attempt answered:\n${tail(previous.run.text, 2000)}`
    : '';
  return `${prompt}\n\n---\nThis is attempt ${attempt} of ${attempts}. The previous attempt did not pass its checks:\n${previous.failures.map((f) => `- ${f}`).join('\n')}${answer}\n\nPick up from the current state of the workspace and make the checks pass.`;
}

function emptyStep(
  step: RecipeStep,
  status: RecipeStepResult['status'],
  error: string | null,
): RecipeStepResult {
  return {
    id: step.id,
    agent: step.agent,
    status,
    attempts: 0,
    run_id: null,
    session_id: null,
    run_ids: [],
    output: '',
    error,
    expect: [],
  };
}

function tail(text: string, max = OUTPUT_TAIL): string {
  return text.length > max ? `…${text.slice(-max)}` : text;
}
