/**
 * Parameters in a recipe's check commands (`[[steps.expect]] command`). A value never becomes
 * shell text: each `{{ name }}` is replaced according to where it stands in the command's
 * quoting — bare → `"$SVC_PARAM_name"`, inside double quotes → `${SVC_PARAM_name}` — and the
 * value travels in the command's environment (`SVC_PARAM_<name>`), so `$(…)`, backticks, `;` and
 * quotes in it are inert. Inside single quotes a variable cannot expand: such a recipe is refused.
 * A string value starting with `-` standing as a whole word would be read as an option: refused
 * unless the parameter says `allow_leading_dash = true`. A parameter of type `command` is the
 * exception: an operator-given command line, inserted as written (bare only), so the shell's
 * analysis and the permission prompt see exactly what runs; it never comes from model output.
 * @module
 */
import { SvcError } from '../errors';
import type { RecipeDefinition, RecipeParameter } from './recipe-schema';

export type ShellContext = 'bare' | 'double' | 'single';

export interface CommandPlaceholder {
  reference: string;
  context: ShellContext;
  /** The placeholder is a whole shell word (nothing else in the word but quotes). */
  wholeWord: boolean;
  start: number;
  end: number;
}

type ParamValue = string | number | boolean;

const REFERENCE = /\{\{\s*([A-Za-z_][\w-]*(?:\.[\w-]+)*)\s*\}\}/y;
const WORD_BREAK = /[\s;&|<>]/;

interface Frame {
  quote: 'none' | 'double' | 'single';
  parens: number;
  /** Opened by a backtick (closed by the next one), else by `$(` or the command itself. */
  backtick: boolean;
  word: { placeholders: CommandPlaceholder[]; literal: boolean };
}

const frame = (backtick: boolean): Frame => ({
  quote: 'none',
  parens: 0,
  backtick,
  word: { placeholders: [], literal: false },
});

function endWord(f: Frame): void {
  const { placeholders, literal } = f.word;
  for (const p of placeholders) p.wholeWord = placeholders.length === 1 && !literal;
  f.word = { placeholders: [], literal: false };
}

/** Every `{{ … }}` of a shell command with its quoting context, in order. */
export function commandPlaceholders(command: string): CommandPlaceholder[] {
  const out: CommandPlaceholder[] = [];
  const stack: Frame[] = [frame(false)];
  let i = 0;
  while (i < command.length) {
    const f = stack.at(-1)!;
    REFERENCE.lastIndex = i;
    const match = REFERENCE.exec(command);
    if (match) {
      const context: ShellContext = f.quote === 'none' ? 'bare' : f.quote;
      const p = { reference: match[1], context, wholeWord: false, start: i, end: i + match[0].length };
      out.push(p);
      f.word.placeholders.push(p);
      i = p.end;
      continue;
    }
    i = step(command, i, f, stack);
  }
  for (const f of stack) endWord(f);
  return out;
}

/** Read one character (or escape, or opener) of the command; returns the next index. */
function step(command: string, i: number, f: Frame, stack: Frame[]): number {
  const c = command[i];
  if (f.quote === 'single') {
    if (c === "'") f.quote = 'none';
    else f.word.literal = true;
    return i + 1;
  }
  if (c === '\\') {
    f.word.literal = true;
    return i + 2;
  }
  const opens =
    c === '`' && !(f.quote === 'none' && f.backtick)
      ? 'backtick'
      : c === '$' && command[i + 1] === '('
        ? 'paren'
        : null;
  if (opens) {
    f.word.literal = true;
    stack.push(frame(opens === 'backtick'));
    return i + (opens === 'paren' ? 2 : 1);
  }
  if (f.quote === 'double') {
    if (c === '"') f.quote = 'none';
    else f.word.literal = true;
    return i + 1;
  }
  if (c === "'" || c === '"') {
    f.quote = c === "'" ? 'single' : 'double';
    return i + 1;
  }
  if (
    c === '#' &&
    f.word.placeholders.length === 0 &&
    !f.word.literal &&
    /^$|[\s;&|(]/.test(command[i - 1] ?? '')
  ) {
    // A comment: up to the end of the line.
    const end = command.indexOf('\n', i);
    return end < 0 ? command.length : end;
  }
  if (c === '`' || (c === ')' && f.parens === 0 && !f.backtick && stack.length > 1)) {
    endWord(f);
    stack.pop();
    return i + 1;
  }
  if (c === '(' || c === ')' || WORD_BREAK.test(c)) {
    if (c === '(') f.parens++;
    if (c === ')') f.parens--;
    endWord(f);
    return i + 1;
  }
  f.word.literal = true;
  return i + 1;
}

/** The environment variable a parameter's value travels in. */
export const paramVariable = (name: string): string => `SVC_PARAM_${name}`;

/**
 * What a recipe's check command may not do with its parameters, whatever the values: a parameter
 * inside single quotes (it cannot expand there), a `command` parameter inside quotes. Messages for
 * recipe_validate; empty when fine.
 */
export function commandTemplateProblems(
  command: string,
  parameters: readonly Pick<RecipeParameter, 'name' | 'type'>[],
): string[] {
  return commandPlaceholders(command).flatMap((p) => {
    const param = parameters.find((x) => x.name === p.reference);
    const problem = param && placementProblem(p, param);
    return problem ? [problem] : [];
  });
}

function placementProblem(
  p: CommandPlaceholder,
  param: Pick<RecipeParameter, 'name' | 'type'>,
): string | undefined {
  if (param.type === 'command' && p.context !== 'bare') {
    return `{{ ${p.reference} }} is a command parameter inside ${p.context} quotes; write it unquoted (command = "{{ ${p.reference} }}"): it is inserted as a command line`;
  }
  if (p.context === 'single') {
    return `{{ ${p.reference} }} is inside single quotes, where its value cannot be passed safely; use double quotes ("{{ ${p.reference} }}") or none`;
  }
  return undefined;
}

/** Every check command of a recipe with its field, e.g. `steps[1].expect[0].command`. */
export function checkCommands(recipe: Pick<RecipeDefinition, 'steps'>): { field: string; command: string }[] {
  return recipe.steps.flatMap((step, i) =>
    step.expect.flatMap((e, j) =>
      e.command === undefined ? [] : [{ field: `steps[${i}].expect[${j}].command`, command: e.command }],
    ),
  );
}

/**
 * Refuse, before anything runs, parameter values a check command must not get: a value that came
 * from a step's output (model output; `fromOutput` names those parameters) in a check command or
 * in a `command` parameter, and a string value starting with `-` standing as a whole word.
 */
export function assertCommandParams(
  name: string,
  recipe: Pick<RecipeDefinition, 'steps' | 'parameters'>,
  params: Readonly<Record<string, ParamValue>>,
  fromOutput: readonly string[] = [],
): void {
  const byName = new Map(recipe.parameters.map((p) => [p.name, p]));
  for (const key of fromOutput) {
    if (byName.get(key)?.type === 'command') {
      throw new SvcError(
        'invalid_input',
        `params.${key}: recipe "${name}" takes "${key}" as a command line, and here its value comes from a step's output (model output); command parameters are given by the operator only. Give it as a workflow parameter or a literal value`,
      );
    }
  }
  for (const { field, command } of checkCommands(recipe)) {
    for (const p of commandPlaceholders(command)) {
      const param = byName.get(p.reference);
      if (!param) continue;
      if (fromOutput.includes(param.name)) {
        throw new SvcError(
          'invalid_input',
          `params.${param.name}: recipe "${name}" uses "${param.name}" in a check command (${field}), and here its value comes from a step's output (model output); check commands take parameters only, never model output. Give it as a workflow parameter or a literal value`,
        );
      }
      leadingDash(name, param, params[param.name], p, field);
    }
  }
}

function leadingDash(
  name: string,
  param: RecipeParameter,
  value: ParamValue | undefined,
  p: CommandPlaceholder,
  field: string,
): void {
  if (typeof value !== 'string' || param.type !== 'string' || param.allow_leading_dash) return;
  if (!p.wholeWord || !value.startsWith('-')) return;
  throw new SvcError(
    'invalid_input',
    `params.${param.name}: ${JSON.stringify(value.length > 60 ? `${value.slice(0, 60)}…` : value)} starts with "-" and stands as a whole word in recipe "${name}"'s check command (${field}), where it would be read as an option; give a value without a leading "-" (or mark the parameter allow_leading_dash = true in the recipe)`,
  );
}

/**
 * The command to run and the environment it needs: parameters replaced by variable expansions
 * (a `command` parameter by its text), `vars` holding the values, and `equivalent`, the same
 * command with the values written in as quoted text (the same words: what the shell analysis
 * judges and the permission prompt shows). Throws for what `commandTemplateProblems` and
 * `assertCommandParams` refuse, as a last guard.
 */
export function renderCheckCommand(
  name: string,
  recipe: Pick<RecipeDefinition, 'parameters'>,
  command: string,
  params: Readonly<Record<string, ParamValue>>,
  field: string,
): { command: string; vars: Record<string, string>; equivalent: string } {
  const byName = new Map(recipe.parameters.map((p) => [p.name, p]));
  const vars: Record<string, string> = {};
  let out = '';
  let equivalent = '';
  let at = 0;
  for (const p of commandPlaceholders(command)) {
    const param = byName.get(p.reference);
    const value = params[p.reference];
    if (!param || value === undefined) {
      throw new SvcError(
        'invalid_input',
        `${field}: unknown template reference {{ ${p.reference} }}; check commands take parameters only (${[...byName.keys()].join(', ') || 'none'})`,
      );
    }
    const problem = placementProblem(p, param);
    if (problem) throw new SvcError('invalid_input', `${field}: ${problem}`);
    leadingDash(name, param, value, p, field);
    const text = String(value);
    if (text.includes('\0')) {
      throw new SvcError(
        'invalid_input',
        `params.${param.name}: contains a NUL byte, which no command can take`,
      );
    }
    const variable = paramVariable(param.name);
    let replacement = text;
    let written = text;
    if (param.type !== 'command') {
      vars[variable] = text;
      replacement = p.context === 'bare' ? `"$${variable}"` : `\${${variable}}`;
      written = p.context === 'bare' ? `'${text.replace(/'/g, `'\\''`)}'` : text.replace(/[\\$`"]/g, '\\$&');
    }
    const literal = command.slice(at, p.start);
    out += literal + replacement;
    equivalent += literal + written;
    at = p.end;
  }
  return { command: out + command.slice(at), vars, equivalent: equivalent + command.slice(at) };
}
