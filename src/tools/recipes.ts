/**
 * Recipes (planning family, primitive): `recipe_list`, `recipe_validate`, and `run_recipe`, which
 * runs a bundled multi-step pipeline yet is tagged primitive (spec TOOLS-53). A recipe run is a
 * pipeline: its own session and ledger run (ids `session_id`, `run_id`, `recipe_run_id`), one
 * sub-agent run per step attempt, children of that run.
 * @module
 */
import { z } from 'zod';
import type { RecipeRunResult, RecipeSummary, RecipeValidation } from '../recipes/recipe-service';
import { sessionIdInput } from '../sessions/session-input';
import { scopedCaller } from './agent-caller';
import { defineTool } from './core/define-tool';
import { opContext } from './core/op-context';

const paramValue = () => z.union([z.string(), z.number(), z.boolean()]);

export const runRecipeInput = () =>
  z.strictObject({
    name: z.string().min(1).describe('Recipe name (see recipe_list).'),
    params: z
      .record(z.string(), paramValue())
      .default({})
      .describe('Parameter values by name. Omit parameters that have a default.'),
    session_id: sessionIdInput(
      'context-or-none',
      'Session the recipe runs under (its session becomes a child). Omit inside a run; outside one, a new session is created.',
    ),
  });

export const runRecipe = defineTool({
  name: 'run_recipe',
  family: 'planning',
  tag: 'primitive',
  description:
    'Run a recipe: a reusable, parameterized multi-step pipeline (recipe_list shows them). Each step runs as a sub-agent; steps with expect checks (a command that must pass) are retried when they fail. Returns recipe_run_id, session_id, run_id, and each step with its status, run_id and output.',
  input: runRecipeInput,
  mutates: true,
  // Its expect commands ask through the shell (like bash); its steps ask for their own tools.
  asksPermission: true,
  parity: false,
  surfaces: {
    mcp: 'svc_run_recipe',
    cli: {
      command: 'recipe run',
      args: ['name'],
      description: 'run a recipe (params as --params key=value,key2=value2 or JSON)',
      prepare: (input) => ({ ...input, params: parseCliParams(input.params) }),
      notice: (input: { name?: unknown }, { app }) => {
        if (typeof input.name !== 'string') return undefined;
        try {
          return shadowNotice(app.recipes.get(input.name));
        } catch {
          return undefined; // an unknown name: the run says so
        }
      },
      text: (r: RecipeRunResult) =>
        [
          `recipe ${r.recipe} ${r.status} (${r.source}${r.path ? ` ${r.path}` : ''}; run ${r.run_id}, session ${r.session_id})`,
          ...r.steps.map(
            (s) =>
              `  ${s.status === 'completed' ? '✓' : '✗'} ${s.id.padEnd(20)} ${s.status}${s.attempts > 1 ? ` after ${s.attempts} attempts` : ''}${s.error && s.status !== 'completed' ? `: ${s.error}` : ''}`,
          ),
          ...(r.output ? ['', r.output] : []),
        ].join('\n'),
      exitCode: (r: RecipeRunResult) => (r.status === 'completed' ? 0 : 1),
    },
  },
  run: async (ctx, input) =>
    ctx.app.recipes.run(input.name, input.params, {
      caller: await scopedCaller(ctx, input.session_id),
      approve: opContext(ctx, 'bash').approve,
    }),
  toModelOutput: (r: RecipeRunResult) =>
    [
      `Recipe ${r.recipe} ${r.status} (recipe_run_id ${r.recipe_run_id}, run ${r.run_id}).`,
      ...r.steps.map(
        (s) =>
          `- ${s.id}: ${s.status}${s.attempts > 1 ? ` after ${s.attempts} attempts` : ''}${s.error && s.status !== 'completed' ? ` — ${s.error}` : ''}`,
      ),
      ...(r.warnings.length ? [`Warnings: ${r.warnings.join('; ')}`] : []),
      ...(r.output ? ['', r.output] : []),
    ].join('\n'),
});

export const recipeList = defineTool({
  name: 'recipe_list',
  family: 'planning',
  tag: 'primitive',
  description:
    'Recipes available to run_recipe: workspace (.svc/recipes/*.toml), user (<config dir>/svc/recipes/) and built-in, with their parameters, steps, validity and last run.',
  input: () => z.strictObject({}),
  mutates: false,
  surfaces: {
    mcp: 'svc_recipe_list',
    cli: {
      command: 'recipe list',
      text: (r: { recipes: RecipeSummary[] }) =>
        r.recipes
          .map((x) => {
            const line = `${x.valid ? '✓' : '✗'} ${x.name.padEnd(24)} ${x.source.padEnd(9)} ${x.steps.length} step${x.steps.length === 1 ? '' : 's'}  ${x.description}`;
            const notice = shadowNotice(x);
            return notice ? `${line}\n  ! ${notice}` : line;
          })
          .join('\n') || 'no recipes',
    },
  },
  run: async (ctx) => {
    const recipes = await ctx.app.recipes.list();
    return { recipes, dirs: ctx.app.recipes.dirs, count: recipes.length };
  },
});

export const recipeValidateInput = () =>
  z.strictObject({
    name: z
      .string()
      .min(1)
      .optional()
      .describe('A known recipe to check (recipe_list). Give one of name, path, content.'),
    path: z.string().min(1).optional().describe('A recipe .toml file, relative to the workspace.'),
    content: z.string().min(1).optional().describe('Recipe TOML text to check before saving it.'),
  });

export const recipeValidate = defineTool({
  name: 'recipe_validate',
  family: 'planning',
  tag: 'primitive',
  description:
    'Check a recipe (by name, file path or TOML text) and list every problem by field (steps[1].agent, parameters[0].default…): TOML syntax, unknown keys, types, duplicate ids, template references, agent kinds, tools.',
  input: recipeValidateInput,
  mutates: false,
  examples: [{ name: 'review-changes' }],
  surfaces: {
    mcp: 'svc_recipe_validate',
    cli: {
      command: 'recipe validate',
      args: ['name?'],
      text: (r: RecipeValidation) =>
        [
          `${r.valid ? 'valid' : 'invalid'}: ${r.name} (${r.source}${r.path ? ` ${r.path}` : ''}): ${r.errors} error(s), ${r.warnings} warning(s)`,
          ...r.diagnostics.map((d) => `  ${d.severity.padEnd(7)} ${d.field}: ${d.message}`),
        ].join('\n'),
      exitCode: (r: RecipeValidation) => (r.valid ? 0 : 2),
    },
  },
  run: async (ctx, input) => ctx.app.recipes.validate(input),
});

/** A recipe file that replaces a built-in of the same name runs its own steps and check commands: say so. */
function shadowNotice(recipe: { name: string; path: string | null; shadows: readonly string[] }) {
  if (!recipe.shadows.includes('builtin') || !recipe.path) return undefined;
  return `${recipe.path} replaces the built-in recipe "${recipe.name}" (its own steps and check commands run)`;
}

/** `k=v,k2=v2` (or a JSON object) from the CLI's --params. */
function parseCliParams(value: unknown): unknown {
  if (typeof value !== 'string') return value;
  const text = value.trim();
  if (text.startsWith('{')) {
    try {
      return JSON.parse(text);
    } catch {
      return value;
    }
  }
  return Object.fromEntries(
    text
      .split(',')
      .filter(Boolean)
      .map((pair) => {
        const at = pair.indexOf('=');
        return at < 0 ? [pair.trim(), 'true'] : [pair.slice(0, at).trim(), pair.slice(at + 1)];
      }),
  );
}

export const recipeTools = [runRecipe, recipeList, recipeValidate];
