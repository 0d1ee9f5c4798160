/**
 * The recipe file format (TOML): a reusable, parameterized multi-step pipeline. Parsing never
 * throws: it returns the recipe (when the shape is right) and diagnostics, each naming its field
 * (`steps[1].expect[0].command`), so recipe_validate can list every problem at once.
 *
 *   name = "fix-failing-tests"                       # optional; must equal the file name
 *   description = "Run the tests, fix what fails"
 *   max_turns = 40                                   # default step limit of every step
 *   [retry]
 *   attempts = 2                                     # extra tries of a step whose expect fails
 *   [[parameters]]
 *   name = "test_command"
 *   type = "command"                                 # string | number | boolean | command
 *   default = "npm test"
 *   [[steps]]
 *   id = "fix"
 *   agent = "general"                                # a sub-agent kind
 *   prompt = "Run {{ test_command }} and fix the failures."
 *   tools = ["bash", "view", "edit"]                 # optional narrowing
 *   [[steps.expect]]
 *   command = "{{ test_command }}"                   # must exit 0 (or `contains` = text in the answer)
 * @module
 */
import { parse as parseToml } from 'smol-toml';
import { z } from 'zod';
import { lazy } from '../util/lazy';

const slug = /^[a-z0-9][a-z0-9_-]*$/;
const identifier = /^[A-Za-z_][A-Za-z0-9_]*$/;

const scalar = lazy(() => z.union([z.string(), z.number(), z.boolean()]));

export const recipeParameterSchema = lazy(() =>
  z.strictObject({
    name: z
      .string()
      .regex(identifier, 'must be an identifier (letters, digits, _), used as {{ name }} in prompts')
      .describe('Parameter name, used as {{ name }} in prompts.'),
    type: z
      .enum(['string', 'number', 'boolean', 'command'])
      .default('string')
      .describe(
        'Value type (default string). command: a command line the operator gives (never a step output), run as written where a check command uses it.',
      ),
    description: z.string().default('').describe('What the parameter is for.'),
    required: z.boolean().default(false).describe('A run must give it (default false).'),
    default: scalar().optional().describe('Value when a run does not give one.'),
    choices: z
      .array(z.union([z.string(), z.number()]))
      .min(1)
      .optional()
      .describe('The only values allowed.'),
    allow_leading_dash: z
      .boolean()
      .optional()
      .describe(
        'A value may start with "-" where a check command uses it as a whole word (else refused: it would be read as an option).',
      ),
  }),
);

export const recipeExpectSchema = lazy(() =>
  z
    .strictObject({
      command: z.string().min(1).optional(),
      contains: z.string().min(1).optional(),
      timeout_seconds: z.number().int().min(1).max(600).optional(),
      description: z.string().optional(),
    })
    .refine((e) => (e.command === undefined) !== (e.contains === undefined), {
      message:
        'give exactly one of command (a shell command that must exit 0) or contains (text the answer must include)',
    }),
);

export const recipeStepSchema = lazy(() =>
  z.strictObject({
    id: z
      .string()
      .regex(slug, 'must be lowercase letters, digits, - or _ (referenced as {{ steps.<id>.output }})'),
    agent: z.string().min(1).default('general'),
    prompt: z.string().min(1),
    description: z.string().optional(),
    tools: z.array(z.string().min(1)).min(1).optional(),
    max_turns: z.number().int().min(1).max(500).optional(),
    model: z.string().min(1).optional(),
    expect: z.array(recipeExpectSchema()).default([]),
    /** Extra tries of this step (default: `retry.attempts`). */
    retries: z.number().int().min(0).max(5).optional(),
    /** Go on with the next step when this one fails. */
    continue_on_failure: z.boolean().default(false),
  }),
);

export const recipeSchema = lazy(() =>
  z.strictObject({
    name: z.string().regex(slug, 'must be lowercase letters, digits, - or _').optional(),
    description: z.string().min(1),
    version: z.union([z.string(), z.number()]).optional(),
    parameters: z.array(recipeParameterSchema()).default([]),
    steps: z.array(recipeStepSchema()).min(1, 'a recipe needs at least one [[steps]] entry'),
    max_turns: z.number().int().min(1).max(500).optional(),
    retry: z.strictObject({ attempts: z.number().int().min(0).max(5).default(0) }).prefault({}),
  }),
);

export type RecipeDefinition = z.output<ReturnType<typeof recipeSchema>>;
export type RecipeParameter = z.output<ReturnType<typeof recipeParameterSchema>>;
export type RecipeStep = z.output<ReturnType<typeof recipeStepSchema>>;

export interface RecipeDiagnostic {
  severity: 'error' | 'warning';
  /** Where: `steps[1].agent`, `parameters[0].default`, or `file` for the whole file. */
  field: string;
  message: string;
}

/** `['steps', 1, 'expect', 0]` → `steps[1].expect[0]`. */
export function fieldPath(path: readonly PropertyKey[]): string {
  let out = '';
  for (const part of path) {
    if (typeof part === 'number') out += `[${part}]`;
    else out += out ? `.${String(part)}` : String(part);
  }
  return out || 'file';
}

/** Parse TOML text into a recipe definition, or diagnostics saying why not. */
export function parseRecipeText(text: string): {
  definition?: RecipeDefinition;
  diagnostics: RecipeDiagnostic[];
} {
  let raw: unknown;
  try {
    raw = parseToml(text);
  } catch (error) {
    const e = error as { message?: string; line?: number; column?: number };
    const where = e.line ? ` (line ${e.line}${e.column ? `, column ${e.column}` : ''})` : '';
    return {
      diagnostics: [
        {
          severity: 'error',
          field: 'file',
          message: `not valid TOML${where}: ${(e.message ?? String(error)).split('\n')[0]}`,
        },
      ],
    };
  }
  const parsed = recipeSchema().safeParse(raw);
  if (!parsed.success) {
    return {
      diagnostics: parsed.error.issues.map((issue) => {
        if (issue.code === 'unrecognized_keys') {
          const base = fieldPath(issue.path);
          return {
            severity: 'error' as const,
            field: base === 'file' ? issue.keys[0] : `${base}.${issue.keys[0]}`,
            message: `unknown key${issue.keys.length > 1 ? 's' : ''} ${issue.keys.join(', ')}`,
          };
        }
        return { severity: 'error' as const, field: fieldPath(issue.path), message: issue.message };
      }),
    };
  }
  return { definition: parsed.data, diagnostics: [] };
}
